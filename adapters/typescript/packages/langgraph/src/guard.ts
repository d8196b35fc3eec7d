/**
 * The guard every gated tool run goes through: the only code that calls a tool body.
 *
 * It reads nothing from the graph's state: a call runs only if crossgate says so now. With no request
 * for the call, only a call the policy allows now runs (a resume a client wrote itself, an approval
 * forged into the checkpoint, do not). With one, the server marks it applied exactly once before the
 * tool runs (a second or concurrent resume gets a 409 and the body never runs again), with the
 * arguments it was decided for (an edit runs the reviewer's; the model is told).
 */

import {
  applyDecision,
  type ApprovalRequest,
  denyMessage,
  type JsonObject,
  NOT_REVIEWED,
  NotFoundError,
  runRecorded,
  type VerifiedClient,
} from '@crossgate/client';
import { ToolMessage } from '@langchain/core/messages';

import { neutralCall, runContext } from './context.js';
import { callRequestId, INVALID } from './review.js';
import { validateArgs } from './schema.js';

/** What the model reads after an edit ran: its own call is not the one that ran. */
export const EDIT_NOTICE =
  'Note: a human reviewer replaced this tool call before it ran. The call recorded in your message is the one you ' +
  'produced, not the one that executed. This was intentional and authorized. Do not re-issue your original call.';

export interface GuardedCall {
  readonly id: string;
  readonly name: string;
  readonly args: unknown;
  readonly schema?: unknown;
}

/** Run `call` through `body` (given the arguments to run) only if crossgate allows it now. */
export async function guardedRun<T>(
  client: VerifiedClient,
  call: GuardedCall,
  body: (args: JsonObject) => Promise<T>,
  options: { framework: string; agent?: string | null },
): Promise<T | ToolMessage> {
  const ctx = runContext(options.agent);
  const answer = (content: string, status: 'error' | 'success' = 'error') =>
    new ToolMessage({ content, name: call.name, tool_call_id: call.id, status });
  const validated = validateArgs(call.schema, call.args);
  if (!validated.ok) return answer(INVALID(call.name, validated.problem));
  const neutral = neutralCall(ctx, options.framework, call.name, validated.args, call.id);
  const request = await find(client, callRequestId(ctx.run, call.id));
  if (request === null) {
    const verdict = await client.evaluateToRun(neutral);
    if (verdict.kind === 'allow') return (await runRecorded(client, null, validated.args, body, { call: neutral, summary })).result!;
    const message = verdict.kind === 'deny' ? denyMessage(call.name, verdict) : NOT_REVIEWED(call.name);
    await client.recordOutcome({ request_id: null, ran: false, error: message, call: neutral });
    return answer(message);
  }
  const applied = await applyDecision(client, request, validated.args, { actor: options.framework });
  if (applied.responded) {
    await client.recordOutcome({ request_id: request.id, ran: false, result: applied.message });
    return answer(applied.message, 'success');
  }
  if (!applied.run) return answer(applied.message);
  const args = applied.args ?? validated.args;
  const ran = (await runRecorded(client, request, args, body, { call: neutral, summary })).result!;
  if (request.decision?.kind !== 'edit' || !(ran instanceof ToolMessage)) return ran;
  const content = `${EDIT_NOTICE} Executed instead: ${call.name} with arguments ${JSON.stringify(args)}.\n\nTool response:\n${text(ran.content)}`;
  return new ToolMessage({ content, name: call.name, tool_call_id: call.id, status: ran.status ?? 'success' });
}

async function find(client: VerifiedClient, id: string): Promise<ApprovalRequest | null> {
  try {
    return await client.get(id);
  } catch (error) {
    if (error instanceof NotFoundError) return null;
    throw error;
  }
}

function summary(result: unknown): string | null {
  if (result instanceof ToolMessage) return text(result.content);
  return result === undefined || result === null ? null : JSON.stringify(result);
}

function text(content: unknown): string {
  return typeof content === 'string' ? content : JSON.stringify(content);
}
