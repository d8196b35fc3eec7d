/**
 * The check immediately before a tool runs: the one place that decides whether a reviewed call runs
 * (Python's `crossgate.adapter.apply_decision` / `run_checked`).
 *
 * The server marks the request applied exactly once (`POST /requests/{id}/applied`); a 409 there means
 * an earlier resume (or a replayed history, or a concurrent approve) applied it already, and the tool
 * does not run again. With a `VerifiedClient` (every gate's), the decision's signatures are verified
 * with the pinned keys first, and one that does not verify closes the request with the refusal.
 */

import { fingerprint } from './canonical.js';
import type { AgentClient } from './client.js';
import { ApiError, ConflictError, CrossgateError, UnreachableError } from './errors.js';
import { alreadyAppliedMessage, NO_DECISION, OTHER_ARGUMENTS } from './messages.js';
import { type ApprovalRequest, approvedArgs, type JsonObject, resolution, type ToolCall } from './model.js';
import { VerifiedClient } from './verified.js';

/** What the check decided for one reviewed call. */
export interface Application {
  readonly request: ApprovalRequest;
  /** True for an approve or edit the server marked applied: run the tool with `args`, then record it. */
  readonly run: boolean;
  readonly args: JsonObject | null;
  /** What the model reads when nothing runs: the reviewer's content (respond) or the refusal. */
  readonly message: string;
  readonly responded: boolean;
}

/** What the model is told for one call: the tool's own result when it ran, else `message`. */
export interface ToolAnswer<T> {
  readonly ran: boolean;
  readonly result?: T;
  readonly message: string;
}

export interface CheckOptions {
  /** Who applies (recorded on the event): the adapter's framework name. */
  actor: string;
}

/**
 * Decide whether `request`'s call runs now; `args` are the arguments the SDK holds for it (null skips
 * that binding, for a call the SDK will not run whatever crossgate says, as a native rejection).
 * Throws UnreachableError when the server cannot be reached: nothing runs, and the run fails.
 */
export async function applyDecision(
  client: AgentClient,
  request: ApprovalRequest,
  args: JsonObject | null,
  options: CheckOptions,
): Promise<Application> {
  const tool = request.call.tool;
  const approved = approvedArgs(request);
  if (args !== null) {
    const held = fingerprint(tool, args);
    if (held !== request.fingerprint && (approved === null || held !== fingerprint(tool, approved))) {
      return refused(client, request, OTHER_ARGUMENTS(tool, request.id), true);
    }
  }
  const decision = resolution(request);
  if (decision === null) return refused(client, request, NO_DECISION(tool, request.id));
  try {
    if (client instanceof VerifiedClient) await client.markApplied(request.id, approved, request);
    else await client.markApplied(request.id, approved);
  } catch (error) {
    if (error instanceof UnreachableError || !(error instanceof CrossgateError)) throw error;
    if (error instanceof ConflictError && (error.code === 'request_expired' || error.code === 'request_cancelled')) {
      // A lapsed approval, a policy deny since it was given, or a decision that did not verify here:
      // the request is closed, and its reason is what the model reads.
      const closed = await client.get(request.id);
      return refused(client, closed, closed.closed_reason ?? `crossgate did not run ${tool}: ${error.message}`);
    }
    if (error instanceof ConflictError) {
      // Applied by an earlier resume, a replay or a concurrent approve: say what happened then.
      const message = alreadyAppliedMessage(tool, request.id, await client.outcome(request.id));
      await client.recordOutcome({
        request_id: request.id,
        ran: false,
        error: `not run again: request ${request.id} was applied before`,
      });
      return { request, run: false, args: null, message, responded: false };
    }
    const text = error instanceof ApiError ? error.message : String(error);
    return refused(client, request, `crossgate did not run ${tool}: ${text}`, true);
  }
  if (decision.kind === 'respond') return { request, run: false, args: null, message: decision.content, responded: true };
  if (decision.kind === 'reject') return refused(client, request, decision.message);
  return { request, run: true, args: approved, message: '', responded: false };
}

/**
 * Run `body` for a reviewed call only if its decision allows it now, and record what happened.
 * `body` gets the arguments to run (the reviewer's, for an edit). Respond answers with the reviewer's
 * content and reject with its message; neither runs the tool. A throwing body is recorded as the
 * tool's failure and the error goes on.
 */
export async function runChecked<T>(
  client: AgentClient,
  request: ApprovalRequest,
  args: JsonObject,
  body: (args: JsonObject) => Promise<T>,
  options: CheckOptions & { call?: ToolCall; summary?: (result: T) => string | null },
): Promise<ToolAnswer<T>> {
  const applied = await applyDecision(client, request, args, options);
  if (applied.responded) await client.recordOutcome({ request_id: request.id, ran: false, result: applied.message });
  if (!applied.run) return { ran: false, message: applied.message };
  return runRecorded(client, request, applied.args ?? {}, body, options);
}

/** Run `body` with `args` and record its outcome: for an applied request, or (request null) an allowed call. */
export async function runRecorded<T>(
  client: AgentClient,
  request: ApprovalRequest | null,
  args: JsonObject,
  body: (args: JsonObject) => Promise<T>,
  options: { call?: ToolCall; summary?: (result: T) => string | null } = {},
): Promise<ToolAnswer<T>> {
  const summary = options.summary ?? defaultSummary;
  const base = { request_id: request?.id ?? null, ran: true, call: options.call ?? null };
  let result: T;
  try {
    result = await body(args);
  } catch (error) {
    const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    await client.recordOutcome({ ...base, error: text });
    throw error;
  }
  await client.recordOutcome({ ...base, result: summary(result) });
  return { ran: true, result, message: '' };
}

async function refused(client: AgentClient, request: ApprovalRequest, message: string, error = false): Promise<Application> {
  await client.recordOutcome({ request_id: request.id, ran: false, ...(error ? { error: message } : { result: message }) });
  return { request, run: false, args: null, message, responded: false };
}

function defaultSummary(result: unknown): string | null {
  if (result === undefined || result === null) return null;
  return typeof result === 'string' ? result : JSON.stringify(result);
}
