/**
 * The review of one model turn's tool calls (batched: one interrupt for all the calls the policy asks
 * about), shared by `gatedToolNode` and `@crossgate/langchain`'s middleware.
 *
 * Each call is validated with its tool's schema and submitted (its request id derives from the thread
 * and the tool call id, so the node re-running on resume finds the same requests). Allowed calls go
 * on; denied and invalid ones are answered at once. If any is asked, the node pauses with one
 * `interrupt()` whose value lists the calls (LangChain's `actionRequests` / `reviewConfigs` shape) and
 * crossgate's request ids. Whatever a resume sends as the answer is not read: after the interrupt
 * returns, the decisions are read from crossgate, by request id, never by position; if one is still
 * pending the node pauses again. A rejection is applied here; approve, edit and respond are applied
 * by the guard when the tool would run (`guardedRun`).
 */

import {
  applyDecision,
  type ApprovalRequest,
  denyMessage,
  type DecisionKind,
  fingerprintRefusal,
  isOpen,
  type JsonObject,
  requestId,
  resolution,
  type VerifiedClient,
} from '@crossgate/client';
import { interrupt } from '@langchain/langgraph';

import { CAPABILITIES, TAG } from './capabilities.js';
import { neutralCall, runContext, type RunContext } from './context.js';
import { inputJsonSchema, validateArgs } from './schema.js';

/** One tool call of a model turn, with what the app says about its review. */
export interface ProposedCall {
  readonly id: string;
  readonly name: string;
  readonly args: unknown;
  /** The tool's schema (zod, or JSON Schema). */
  readonly schema?: unknown;
  /** The decisions a reviewer may make for it (default: all four). */
  readonly allowedDecisions?: readonly DecisionKind[];
  /** The JSON Schema an edit must pass (default: the input side of the tool's zod schema). */
  readonly argsSchema?: JsonObject | null;
  readonly description?: string | null;
}

/** What the node does with one call once reviewed: run it through the guard, or answer the model now. */
export type Reviewed =
  | { readonly call: ProposedCall; readonly run: true }
  | { readonly call: ProposedCall; readonly run: false; readonly message: string; readonly status: 'error' | 'success' };

/** The value a review interrupt carries: LangChain's batched shape plus crossgate's request ids. */
export interface ReviewInterrupt {
  readonly actionRequests: { name: string; args: JsonObject; description: string }[];
  readonly reviewConfigs: { actionName: string; allowedDecisions: DecisionKind[]; argsSchema?: JsonObject }[];
  readonly requestIds: string[];
}

export const INVALID = (tool: string, problem: string) =>
  `crossgate did not run ${tool}: the tool would refuse these arguments (${problem}). Fix them and call it again.`;

/** The request id of one tool call of a thread: the same every time the node sees the call again. */
export function callRequestId(run: string, toolCallId: string): string {
  return requestId(TAG, run, toolCallId);
}

export interface ReviewOptions {
  readonly framework: string;
  /** The agent name when the config names none. */
  readonly agent?: string | null;
}

/** Review `calls` (see the module doc); pauses the node while any asked call is undecided. */
export async function reviewCalls(client: VerifiedClient, calls: readonly ProposedCall[], options: ReviewOptions): Promise<Reviewed[]> {
  const ctx = runContext(options.agent);
  const reviewed: Reviewed[] = [];
  const asked: { index: number; call: ProposedCall; args: JsonObject; request: ApprovalRequest }[] = [];
  for (const call of calls) {
    const validated = validateArgs(call.schema, call.args);
    if (!validated.ok) {
      const message = INVALID(call.name, validated.problem);
      await client.recordOutcome({ request_id: null, ran: false, error: message, call: neutralCall(ctx, options.framework, call.name, {}, call.id) });
      reviewed.push({ call, run: false, message, status: 'error' });
      continue;
    }
    let submission;
    try {
      submission = await client.submit(neutralCall(ctx, options.framework, call.name, validated.args, call.id), submitOptions(ctx, call));
    } catch (error) {
      // A tool call id seen before with other arguments: its request was reviewed for those, not these.
      const refusal = fingerprintRefusal(call.name, error);
      if (refusal === null) throw error;
      reviewed.push({ call, run: false, message: refusal, status: 'error' });
      continue;
    }
    if (submission.request !== null) {
      asked.push({ index: reviewed.length, call, args: validated.args, request: submission.request });
      reviewed.push({ call, run: true });
    } else if (submission.verdict.kind === 'allow') {
      reviewed.push({ call, run: true });
    } else {
      reviewed.push({ call, run: false, message: denyMessage(call.name, submission.verdict), status: 'error' });
    }
  }
  if (asked.length === 0) return reviewed;
  const value: ReviewInterrupt = {
    actionRequests: asked.map((a) => ({ name: a.call.name, args: a.args, description: a.request.description ?? a.request.reason })),
    reviewConfigs: asked.map((a) => ({
      actionName: a.call.name,
      allowedDecisions: [...a.request.allowed_decisions],
      ...(a.request.args_schema ? { argsSchema: a.request.args_schema } : {}),
    })),
    requestIds: asked.map((a) => a.request.id),
  };
  const requests = await decided(client, value);
  for (const [i, a] of asked.entries()) {
    const request = requests[i]!;
    if (resolution(request)?.kind !== 'reject') continue;
    // The tool will not run whatever crossgate says: apply the rejection now, with no arguments to bind.
    const applied = await applyDecision(client, request, null, { actor: options.framework });
    reviewed[a.index] = { call: a.call, run: false, message: applied.message, status: 'error' };
  }
  return reviewed;
}

/** Pause until every request of `value` is decided (or closed), reading decisions from crossgate only. */
async function decided(client: VerifiedClient, value: ReviewInterrupt): Promise<ApprovalRequest[]> {
  for (;;) {
    interrupt(value);
    const requests = await Promise.all(value.requestIds.map((id) => client.get(id)));
    if (!requests.some(isOpen)) return requests;
  }
}

function submitOptions(ctx: RunContext, call: ProposedCall) {
  const allowed = call.allowedDecisions ?? CAPABILITIES;
  return {
    request_id: callRequestId(ctx.run, call.id),
    capabilities: CAPABILITIES.filter((d) => allowed.includes(d)),
    args_schema: call.argsSchema ?? inputJsonSchema(call.schema),
    requested_by: ctx.requestedBy,
    description: call.description ?? null,
  };
}
