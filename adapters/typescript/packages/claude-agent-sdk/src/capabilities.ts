/** What each crossgate decision becomes in the Claude Agent SDK for TypeScript (0.3.332, CLI 2.1.332). */

import type { DecisionKind } from '@crossgate/client';

/**
 * The `framework` this adapter reports on every call, request and parked run: the Python adapter's name with
 * `-ts`, so a policy, the page and a resume worker tell the two apart (their parked states are not each other's).
 */
export const FRAMEWORK = 'claude-agent-sdk-ts';

/** The tag of this adapter's request ids: `requestId(TAG, session, toolUseId)`, as `crossgate_claude` has it. */
export const TAG = 'claude';

/** How each decision reaches the SDK, for a tool of a server crossgate built (`Gate({ servers })`). */
export const DECISION_MAPPING: Readonly<Record<DecisionKind, string>> = Object.freeze({
  approve:
    "canUseTool -> { behavior: 'allow', updatedInput: <the proposed input> }; crossgate's handler runs it once the " +
    'server marks the request applied',
  edit: "canUseTool -> { behavior: 'allow', updatedInput: <the edited input> }; crossgate's handler runs it once marked applied",
  reject:
    "canUseTool -> { behavior: 'deny', message: <the reviewer's text, verbatim> }, never interrupt (the CLI would drop " +
    'the message); the model reads it as an is_error tool result',
  respond:
    "canUseTool allows the call and crossgate's handler returns the reviewer's content as the tool's result without " +
    'running it; only for tools of a server crossgate built (elsewhere the CLI runs the tool itself)',
});

/** Decisions for tools of the SDK MCP servers crossgate builds: its handler is the only caller of their bodies. */
export const GATED_CAPABILITIES: readonly DecisionKind[] = Object.freeze(['approve', 'edit', 'reject', 'respond'] as DecisionKind[]);

/** Decisions for every other tool (the CLI's built-ins, MCP servers in their own processes): no respond. */
export const CLI_CAPABILITIES: readonly DecisionKind[] = Object.freeze(['approve', 'edit', 'reject'] as DecisionKind[]);

/** One row of the capability table: how the SDK expresses a reviewer's answer, or how crossgate emulates it. */
export interface Capability {
  readonly decision: 'approve' | 'edit' | 'reject' | 'respond' | 'remember' | 'defer';
  readonly support: 'native' | 'emulated' | 'refused';
  readonly how: string;
  /** For respond: refused (never offered to a reviewer) for tools crossgate's handler does not run. */
  readonly otherTools?: 'refused';
}

/** The six decisions in the Claude Agent SDK (TS) through crossgate. */
export const CAPABILITY_TABLE: readonly Capability[] = Object.freeze([
  { decision: 'approve', support: 'native', how: DECISION_MAPPING.approve },
  { decision: 'edit', support: 'native', how: DECISION_MAPPING.edit },
  { decision: 'reject', support: 'native', how: DECISION_MAPPING.reject },
  { decision: 'respond', support: 'emulated', how: DECISION_MAPPING.respond, otherTools: 'refused' },
  {
    decision: 'remember',
    support: 'emulated',
    how: "a crossgate standing rule the server's verdict applies: the PreToolUse hook and canUseTool let a call it allows through",
  },
  {
    decision: 'defer',
    support: 'native',
    how:
      "PreToolUse permissionDecision 'defer' ends the turn (stop_reason tool_deferred); the session id and deferred call " +
      'are parked on the server; resume: query({ options: { resume } }) in any process, once, and canUseTool is asked again',
  },
] satisfies Capability[]);
