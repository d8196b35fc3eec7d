/** What each crossgate decision becomes in the OpenAI Agents SDK for JavaScript (`@openai/agents` 0.20). */

import type { DecisionKind } from '@crossgate/client';

/**
 * The `framework` this adapter reports on every call, request and parked run: the Python adapter's name with
 * `-ts`, so a policy, the page and a resume worker tell the two apart (their parked states are not each other's).
 */
export const FRAMEWORK = 'openai-agents-ts';

/** The tag of this adapter's request ids: `requestId(TAG, run, agent, callId)`, as `crossgate_openai` has it. */
export const TAG = 'oa';

/** How each decision reaches the SDK; the gated tool is the only caller of the tool body. */
export const DECISION_MAPPING: Readonly<Record<DecisionKind, string>> = Object.freeze({
  approve:
    "state.approve(item); the SDK calls crossgate's gated invoke, which runs the proposed arguments once the server " +
    'marks the request applied',
  edit:
    'state.approve(item); the SDK has no edit, so the gated invoke runs the edited arguments (bound to the call id ' +
    "and checked against the decision's fingerprint); the model's history keeps the proposed ones",
  reject: "state.reject(item, { message: <the reviewer's text, verbatim> }); the model reads it as the call's result",
  respond: "state.approve(item); the gated invoke returns the reviewer's content as the tool's output and does not run it",
});

/** The decisions this adapter can express for every gated function tool: all four. */
export const CAPABILITIES: readonly DecisionKind[] = Object.freeze(Object.keys(DECISION_MAPPING) as DecisionKind[]);

/** One row of the capability table: how the SDK expresses a reviewer's answer, or how crossgate emulates it. */
export interface Capability {
  readonly decision: 'approve' | 'edit' | 'reject' | 'respond' | 'remember' | 'defer';
  readonly support: 'native' | 'emulated' | 'refused';
  readonly how: string;
}

/** The six decisions in the OpenAI Agents SDK (JS) through crossgate. */
export const CAPABILITY_TABLE: readonly Capability[] = Object.freeze([
  { decision: 'approve', support: 'native', how: DECISION_MAPPING.approve },
  { decision: 'edit', support: 'emulated', how: DECISION_MAPPING.edit },
  { decision: 'reject', support: 'native', how: DECISION_MAPPING.reject },
  { decision: 'respond', support: 'emulated', how: DECISION_MAPPING.respond },
  {
    decision: 'remember',
    support: 'emulated',
    how:
      "a crossgate standing rule the server's verdict applies (needsApproval answers false for a call it allows); " +
      "never the SDK's alwaysApprove, which ignores arguments and ends with the run",
  },
  {
    decision: 'defer',
    support: 'native',
    how: "RunState.toString() kept on the server as a parked run; RunState.fromString() in any process, once",
  },
] satisfies Capability[]);
