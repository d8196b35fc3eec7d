/** What each crossgate decision becomes in a LangChain.js agent, and the names this adapter reports. */

import type { DecisionKind } from '@crossgate/client';

/** The `framework` of every call and request the middleware makes (parked threads are `langgraph-ts`). */
export const FRAMEWORK = 'langchain-ts';

export const DECISION_MAPPING: Readonly<Record<DecisionKind, string>> = Object.freeze({
  approve: "the call goes on to the tools node; crossgate's guard (wrapToolCall) runs it once the server marks the request applied",
  edit: "the guard runs the reviewer's arguments (checked by the server against the tool's zod input schema when the edit is made); the ToolMessage says what ran",
  reject: "afterModel answers with an error ToolMessage carrying the reviewer's text verbatim; the tool does not run",
  respond: "the guard answers with a success ToolMessage of the reviewer's content; the tool does not run (LangChain.js 1.5.14 has no respond of its own)",
});

/**
 * All four decisions, narrowed per tool by `interruptOn`'s `allowedDecisions`. Remember is a crossgate
 * standing rule the server's verdict applies; an expired or cancelled request answers as a rejection.
 */
export const CAPABILITIES: readonly DecisionKind[] = Object.freeze(Object.keys(DECISION_MAPPING) as DecisionKind[]);
