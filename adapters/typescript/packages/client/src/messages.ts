/** What the model reads when crossgate did not run a call: the same words as the Python adapters. */

import { ApiError } from './errors.js';
import type { AuditEvent, Verdict } from './model.js';

export const NO_DECISION = (tool: string, request: string) =>
  `crossgate did not run ${tool}: request ${request} is still pending, so nothing may run yet.`;

export const OTHER_ARGUMENTS = (tool: string, request: string) =>
  `crossgate did not run ${tool}: request ${request} was reviewed for other arguments than the ones about to run.`;

export const NOT_REVIEWED = (tool: string) =>
  `crossgate did not run ${tool}: the policy sends it to a reviewer and no approved request covers this call.`;

/** The tool output for a call the policy denied outright (the reason as it is when it says so already, as a state head refusal does). */
export function denyMessage(tool: string, verdict: Verdict): string {
  const prefix = `crossgate did not run ${tool}: `;
  const reason = verdict.reason || 'the policy does not allow this call';
  return reason.startsWith(prefix) ? reason : prefix + reason;
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

/** What the model reads when a decision does not verify where the tool runs (Python `DECISION_REFUSED`). */
export const DECISION_REFUSED = (tool: string, request: string, problem: string) =>
  `crossgate did not run ${tool}: the decision on request ${request} did not verify against the authority key ` +
  `pinned where the tool runs (${problem}), so nothing ran. Do not retry it; tell the user a reviewer must decide ` +
  'it again.';

/** The deny reason of a call a standing rule allowed when the rule does not verify (Python `RULE_REFUSED`). */
export const RULE_REFUSED = (rule: string, tool: string, problem: string) =>
  `standing rule ${rule} allowed this ${tool} call, but the rule did not verify against the authority key pinned ` +
  `where the tool runs (${problem}), so it was not run. Do not retry it; tell the user it needs a reviewer's decision.`;

/** What the model reads when an approval was not applied within its window (Python `APPROVAL_LAPSED_MESSAGE`). */
export const APPROVAL_LAPSED = (tool: string, seconds: number) =>
  `A person approved this ${tool} call, but it was not run within ${pythonG(seconds)} seconds of the approval, so the ` +
  'approval lapsed and the call was not run. Do not retry it on your own; tell the user it needs a fresh approval.';

/** A number as Python's `{:g}` writes it: six significant digits, trailing zeros dropped. */
export function pythonG(value: number): string {
  if (value === 0 || !Number.isFinite(value)) return String(value);
  const [mantissa, exp] = value.toExponential(5).split('e') as [string, string];
  const exponent = Number(exp);
  const strip = (text: string) => (text.includes('.') ? text.replace(/\.?0+$/, '') : text);
  if (exponent < -4 || exponent >= 6) return `${strip(mantissa)}e${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`;
  return strip(value.toFixed(Math.max(0, 5 - exponent)));
}

/** The refusal for a request id the server holds for other arguments (422 fingerprint_mismatch), else null. */
export function fingerprintRefusal(tool: string, error: unknown): string | null {
  if (error instanceof ApiError && error.code === 'fingerprint_mismatch') return `crossgate did not run ${tool}: ${error.message}`;
  return null;
}

/** What the model reads when the newest state head is missing or past its expiry (Python `STALE`). */
export const STALE = (tool: string, problem: string) =>
  `crossgate did not run ${tool}: ${problem}. Nothing ran. Do not retry it now; tell the user the crossgate ` +
  'server must be running (and the store current) before tools can run.';

/** What the model reads when the policy evaluated is older than the state head's (Python `ROLLED_BACK`). */
export const ROLLED_BACK = (tool: string, problem: string) =>
  `crossgate did not run ${tool}: ${problem}. Nothing ran. Do not retry it; tell the user the store was rolled ` +
  'back and an operator must look at it.';

/** What the model reads when the state head shows the approval consumed (Python `CONSUMED`). */
export const CONSUMED = (tool: string, request: string) =>
  `crossgate did not run ${tool}: the approval on request ${request} was applied already, so it cannot run again. ` +
  'Nothing ran. Do not retry it; ask the user for a new approval if the call is still needed.';

/** The deny reason of a call a standing rule the state head names revoked allowed (Python `REVOKED_RULE`). */
export const REVOKED_RULE = (rule: string, tool: string) =>
  `standing rule ${rule} allowed this ${tool} call, but the authority's state head shows the rule revoked, so it ` +
  "was not run. Do not retry it; tell the user it needs a reviewer's decision.";
