/** What each crossgate decision becomes in the Vercel AI SDK 7. */

import type { DecisionKind } from '@crossgate/client';

/** The `framework` this adapter reports on every call, request and parked run. */
export const FRAMEWORK = 'ai-sdk';

/** How each decision reaches the SDK; the gated tool is the only caller of the tool body. */
export const DECISION_MAPPING: Readonly<Record<DecisionKind, string>> = Object.freeze({
  approve:
    "tool-approval-response approved:true; the SDK calls crossgate's gated execute, which runs the proposed arguments " +
    'once the server marks the request applied',
  edit:
    'tool-approval-response approved:true; the SDK has no edit, so the gated execute runs the edited arguments ' +
    "(bound to the call id and the decision's fingerprint); the model's history keeps the proposed ones",
  reject: "tool-approval-response approved:false, reason: <the reviewer's text, verbatim>; the model reads execution-denied",
  respond: "tool-approval-response approved:true; the gated execute returns the reviewer's content and the tool does not run",
});

/**
 * The decisions this adapter can express for every gated tool: all four. Remember is a crossgate
 * standing rule the server's verdict applies (toolApproval answers not-applicable for an allowed call,
 * denied for a denied one); an expired or cancelled request answers as a rejection.
 */
export const CAPABILITIES: readonly DecisionKind[] = Object.freeze(
  (Object.keys(DECISION_MAPPING) as DecisionKind[]).filter((k) => k in DECISION_MAPPING),
);

/** The tag of this adapter's request ids (`requestId(TAG, run, toolCallId)`). */
export const TAG = 'aisdk';
