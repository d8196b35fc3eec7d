/**
 * `requestApproval`: a node asks crossgate about one call it is about to make (Python's
 * `request_approval`). Allow and deny answer at once; ask pauses the node with `interrupt()` until a
 * reviewer decided. The node re-runs from its first line on resume, so the request id derives from the
 * thread, the node and its step (or `callId`): every re-run finds the same request.
 */

import {
  applyDecision,
  type DecisionKind,
  denyMessage,
  fingerprintRefusal,
  type JsonObject,
  type VerifiedClient,
} from '@crossgate/client';
import { interrupt } from '@langchain/langgraph';

import { CAPABILITIES, FRAMEWORK } from './capabilities.js';
import { neutralCall, runContext } from './context.js';
import { callRequestId, INVALID } from './review.js';
import { inputJsonSchema, validateArgs } from './schema.js';

/** What the node does: run `args` (approve: the proposal, edit: the reviewer's), or answer with text. */
export type Approval =
  | { readonly kind: 'approve' | 'edit'; readonly args: JsonObject }
  | { readonly kind: 'reject'; readonly message: string }
  | { readonly kind: 'respond'; readonly content: string };

export interface ApprovalOptions {
  /** Identifies the call within the node's step; default: one call per node and step. */
  callId?: string;
  /** The call's schema (zod or JSON Schema): arguments it refuses are rejected unjudged; edits must pass it. */
  argsSchema?: unknown;
  description?: string;
  allowedDecisions?: readonly DecisionKind[];
  agent?: string;
}

/**
 * crossgate's answer for `tool(args)`, marked applied once: run the call only on approve or edit, right
 * after this returns. A re-run after the call was applied gets `reject` with what crossgate recorded.
 */
export async function requestApproval(client: VerifiedClient, tool: string, args: JsonObject, options: ApprovalOptions = {}): Promise<Approval> {
  const ctx = runContext(options.agent);
  const callId = options.callId ?? `${ctx.node ?? 'node'}:${ctx.step ?? 0}`;
  const validated = validateArgs(options.argsSchema, args);
  if (!validated.ok) return { kind: 'reject', message: INVALID(tool, validated.problem) };
  const call = neutralCall(ctx, FRAMEWORK, tool, validated.args, callId);
  const allowed = options.allowedDecisions ?? CAPABILITIES;
  let submission;
  try {
    submission = await client.submit(call, {
      request_id: callRequestId(ctx.run, callId),
      capabilities: CAPABILITIES.filter((d) => allowed.includes(d)),
      args_schema: inputJsonSchema(options.argsSchema),
      requested_by: ctx.requestedBy,
      description: options.description ?? null,
    });
  } catch (error) {
    // The node computed other arguments on a re-run: the request was reviewed for the first ones.
    const refusal = fingerprintRefusal(tool, error);
    if (refusal === null) throw error;
    return { kind: 'reject', message: refusal };
  }
  if (submission.request === null) {
    if (submission.verdict.kind === 'allow') return { kind: 'approve', args: validated.args };
    return { kind: 'reject', message: denyMessage(tool, submission.verdict) };
  }
  let request = submission.request;
  while (request.status === 'pending') {
    interrupt({ actionRequests: [{ name: tool, args: validated.args, description: request.description ?? request.reason }], requestIds: [request.id] });
    request = await client.get(request.id);
  }
  const applied = await applyDecision(client, request, validated.args, { actor: FRAMEWORK });
  if (applied.run) return { kind: request.decision?.kind === 'edit' ? 'edit' : 'approve', args: applied.args ?? validated.args };
  if (applied.responded) {
    await client.recordOutcome({ request_id: request.id, ran: false, result: applied.message });
    return { kind: 'respond', content: applied.message };
  }
  return { kind: 'reject', message: applied.message };
}
