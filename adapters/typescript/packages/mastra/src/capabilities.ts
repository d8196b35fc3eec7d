/** What each crossgate decision becomes in Mastra 1.x. */

import type { DecisionKind } from '@crossgate/client';

/** The `framework` this adapter reports on every call, request and parked run. */
export const FRAMEWORK = 'mastra';

/** The tag of this adapter's request ids (`requestId(TAG, run, toolCallId)`). */
export const TAG = 'mastra';

/** How each decision reaches the SDK; the gated tool is the only caller of the tool body. */
export const DECISION_MAPPING: Readonly<Record<DecisionKind, string>> = Object.freeze({
  approve: "agent.approveToolCall({ runId, toolCallId }); crossgate's gated execute runs the proposed arguments once the server marks the request applied",
  edit:
    'agent.approveToolCall; Mastra has no argument override, so the gated execute runs the edited arguments ' +
    "(bound to the call id and the decision's fingerprint); the model's history keeps the proposed ones",
  reject: "agent.declineToolCall({ runId, toolCallId, reason: <the reviewer's text, verbatim> }); the model reads it as the tool's result",
  respond: "agent.approveToolCall; the gated execute returns the reviewer's content and the tool does not run",
});

/**
 * The decisions this adapter can express for every gated tool: all four. Remember is a crossgate
 * standing rule the server's verdict applies (the gated tool's requireApproval asks only when the
 * server says ask); an expired or cancelled request answers as a rejection.
 */
export const CAPABILITIES: readonly DecisionKind[] = Object.freeze(Object.keys(DECISION_MAPPING) as DecisionKind[]);
