/** What each crossgate decision becomes in LangGraph.js, and the names this adapter reports. */

import type { DecisionKind } from '@crossgate/client';

/** The `framework` of graph calls (`requestApproval`, `gatedToolNode`) and of every parked thread. */
export const FRAMEWORK = 'langgraph-ts';

/** The tag of this adapter's request ids. */
export const TAG = 'lgts';

/** How each decision reaches the graph; only crossgate's check runs a reviewed call. */
export const DECISION_MAPPING: Readonly<Record<DecisionKind, string>> = Object.freeze({
  approve: "requestApproval returns { kind: 'approve', args }: the node runs the proposed arguments; the tool node runs the call",
  edit: "requestApproval returns { kind: 'edit', args }: the node runs the reviewer's arguments; the tool node runs them, told to the model",
  reject: "requestApproval returns { kind: 'reject', message }; the tool node answers with an error ToolMessage carrying the reviewer's text verbatim",
  respond: "requestApproval returns { kind: 'respond', content }; the tool node answers with a ToolMessage of the reviewer's content, the tool not run",
});

/**
 * All four decisions. Remember is a crossgate standing rule the server's verdict applies; an expired
 * or cancelled request answers as a rejection.
 */
export const CAPABILITIES: readonly DecisionKind[] = Object.freeze(Object.keys(DECISION_MAPPING) as DecisionKind[]);
