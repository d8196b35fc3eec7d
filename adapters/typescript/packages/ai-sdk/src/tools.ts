/**
 * The gated tools: each tool's `execute` replaced by crossgate's, the only code that calls the body.
 *
 * The gated execute runs a call only after the check before a tool runs passed for it: a call the
 * policy allowed in this SDK call is run and recorded; any other call needs its request, decided and
 * marked applied by the server exactly once (a replayed history, a forged approval or a second resume
 * gets a 409 there and the body never runs). Outside a `Gate` run, nothing runs.
 */

import {
  type AgentClient,
  type ApprovalRequest,
  denyMessage,
  type JsonObject,
  NotFoundError,
  runChecked,
  runRecorded,
  type ToolCall,
  type VerifiedClient,
} from '@crossgate/client';
import type { Tool, ToolExecutionOptions, ToolSet } from 'ai';

import { FRAMEWORK } from './capabilities.js';
import { callRequestId, currentScope, type RunScope } from './scope.js';

export interface Binding {
  /** The gate's client: it verifies what lets a call run with the gate's pinned keys. */
  readonly client: VerifiedClient;
}

type Body = (input: unknown, options: ToolExecutionOptions<unknown>) => unknown;

export const OUTSIDE_RUN = (tool: string) =>
  `crossgate did not run ${tool}: it was called outside a crossgate run (Gate.run or Gate.resume), so no check could pass.`;
export const NOT_REVIEWED = (tool: string) =>
  `crossgate did not run ${tool}: no reviewer approved this call, so it may not run.`;
export const MALFORMED = (tool: string) => `crossgate did not run ${tool}: its arguments are not a JSON object.`;

/** Copies of `tools` whose `execute` goes through crossgate; tools without `execute` are left as they are. */
export function gateTools<TOOLS extends ToolSet>(tools: TOOLS, binding: Binding): { tools: TOOLS; gated: Set<string> } {
  const gated = new Set<string>();
  const copies: Record<string, Tool> = {};
  for (const [name, original] of Object.entries(tools)) {
    const body = (original as { execute?: Body }).execute;
    if (typeof body !== 'function' || (original as { type?: string }).type === 'provider') {
      copies[name] = original;
      continue;
    }
    gated.add(name);
    const execute = (input: unknown, options: ToolExecutionOptions<unknown>) => gatedExecute(binding, name, body, input, options);
    copies[name] = { ...original, execute } as Tool;
  }
  return { tools: copies as TOOLS, gated };
}

/** The neutral call for one SDK tool call of `scope`'s run. */
export function toolCall(scope: RunScope, tool: string, args: JsonObject, callId: string): ToolCall {
  const context: JsonObject = { ...scope.context };
  if (scope.requestedBy !== null) context.requested_by = scope.requestedBy;
  return { framework: FRAMEWORK, tool, args, call_id: callId, run: scope.run, session: scope.session, agent: scope.agent, context };
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.getPrototypeOf(value) === Object.prototype;
}

async function gatedExecute(binding: Binding, tool: string, body: Body, input: unknown, options: ToolExecutionOptions<unknown>): Promise<unknown> {
  const scope = currentScope();
  if (scope === undefined) {
    await binding.client.recordOutcome({ request_id: null, ran: false, error: OUTSIDE_RUN(tool), call: { framework: FRAMEWORK, tool, args: {} } });
    return OUTSIDE_RUN(tool);
  }
  try {
    return await answer(binding, scope, tool, body, input, options);
  } catch (error) {
    // The SDK turns a throwing execute into a tool-error result the model reads; crossgate fails the run instead.
    scope.failures.push(error instanceof Error ? error : new Error(String(error)));
    throw error;
  }
}

async function answer(
  binding: Binding,
  scope: RunScope,
  tool: string,
  body: Body,
  input: unknown,
  options: ToolExecutionOptions<unknown>,
): Promise<unknown> {
  const { client } = binding;
  if (!isJsonObject(input)) return MALFORMED(tool);
  const call = toolCall(scope, tool, input, options.toolCallId);
  const run = (args: JsonObject) => collect(body(args, options));
  if (scope.allowed.has(options.toolCallId)) {
    scope.allowed.delete(options.toolCallId);
    return (await runRecorded(client, null, input, run, { call })).result;
  }
  const id = callRequestId(scope.run, options.toolCallId);
  const request = scope.decided.get(id) ?? (await find(client, id));
  if (request === null) {
    // No request for this call: only a call the policy allows now may run (a forged approval does not).
    const verdict = await client.evaluateToRun(call);
    if (verdict.kind === 'allow') return (await runRecorded(client, null, input, run, { call })).result;
    const message = verdict.kind === 'deny' ? denyMessage(tool, verdict) : NOT_REVIEWED(tool);
    await client.recordOutcome({ request_id: null, ran: false, error: message, call });
    return message;
  }
  const checked = await runChecked(client, request, input, run, { actor: FRAMEWORK, call });
  return checked.ran ? checked.result : checked.message;
}

async function find(client: AgentClient, id: string): Promise<ApprovalRequest | null> {
  try {
    return await client.get(id);
  } catch (error) {
    if (error instanceof NotFoundError) return null;
    throw error;
  }
}

/** A tool's output: its value, or the last value a streaming tool yields. */
async function collect(output: unknown): Promise<unknown> {
  if (output !== null && typeof output === 'object' && Symbol.asyncIterator in output) {
    let last: unknown;
    for await (const item of output as AsyncIterable<unknown>) last = item;
    return last;
  }
  return await output;
}
