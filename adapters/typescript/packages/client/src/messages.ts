/** What the model reads when crossgate did not run a call: the same words as the Python adapters. */

import type { AuditEvent, Verdict } from './model.js';

export const NO_DECISION = (tool: string, request: string) =>
  `crossgate did not run ${tool}: request ${request} is still pending, so nothing may run yet.`;

export const OTHER_ARGUMENTS = (tool: string, request: string) =>
  `crossgate did not run ${tool}: request ${request} was reviewed for other arguments than the ones about to run.`;

export const NOT_REVIEWED = (tool: string) =>
  `crossgate did not run ${tool}: the policy sends it to a reviewer and no approved request covers this call.`;

/** The tool output for a call the policy denied outright. */
export function denyMessage(tool: string, verdict: Verdict): string {
  return `crossgate did not run ${tool}: ${verdict.reason || 'the policy does not allow this call'}`;
}

/** The tool output for a call whose decision was applied before, given its recorded outcome. */
export function alreadyAppliedMessage(tool: string, requestId: string, outcome: AuditEvent | null): string {
  if (outcome === null) {
    return (
      `crossgate did not run ${tool} again: request ${requestId} was applied before, but no outcome was ` +
      'recorded, so it may or may not have taken effect. Do not retry it; tell the user to check.'
    );
  }
  const { result, error, ran } = outcome.payload;
  if (ran) {
    const head = `${tool} already ran for this call (request ${requestId})`;
    if (error) return `${head} and failed: ${String(error)}. It was not run again.`;
    return `${head}; it was not run again. Its result was: ${String(result)}`;
  }
  return String(result || error || `crossgate did not run ${tool}: request ${requestId} was answered before.`);
}
