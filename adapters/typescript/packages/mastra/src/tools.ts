/**
 * The gated tools: Mastra tools whose `execute` is crossgate's, the only code that calls the body.
 *
 * `requireApproval` asks the server: a call suspends for approval only when the policy says ask. The
 * gated execute runs a call only after the check before a tool runs passed: no request and an allow
 * verdict now, or a request decided and marked applied by the server exactly once (a concurrent or
 * repeated approveToolCall gets a 409 there and the body never runs again). Outside a `Gate` run,
 * nothing runs.
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
import { createTool } from '@mastra/core/tools';

import { FRAMEWORK } from './capabilities.js';
import { callRequestId, currentScope, type RunScope } from './scope.js';

export interface Binding {
  /** The gated tools' client: it verifies what lets a call run with the pinned keys. */
  readonly client: VerifiedClient;
}

/** The fields of a Mastra tool the gate reads and copies. */
export interface MastraTool {
  id: string;
  description?: string;
  inputSchema?: unknown;
  outputSchema?: unknown;
  execute?: (input: never, context: never) => unknown;
}

type Body = (input: unknown, context: unknown) => unknown;

const GATED = new WeakSet<object>();

export const OUTSIDE_RUN = (tool: string) =>
  `crossgate did not run ${tool}: it was called outside a crossgate run (Gate.run or Gate.resume), so no check could pass.`;
export const NOT_REVIEWED = (tool: string) => `crossgate did not run ${tool}: no reviewer approved this call, so it may not run.`;
export const MALFORMED = (tool: string) => `crossgate did not run ${tool}: its arguments are not a JSON object.`;

/** True for a tool `gateTools` made. */
export function isGated(tool: unknown): boolean {
  return typeof tool === 'object' && tool !== null && GATED.has(tool);
}

/** Gated copies of Mastra tools, by the same keys; give these to the `Agent`. */
export function gateTools<T extends Record<string, MastraTool>>(tools: T, binding: Binding): { [K in keyof T]: T[K] } {
  const copies: Record<string, unknown> = {};
  for (const [key, original] of Object.entries(tools)) {
    const body = original.execute as Body | undefined;
    if (typeof body !== 'function') {
      copies[key] = original;
      continue;
    }
    const name = original.id;
    const gated = createTool({
      id: name,
      description: original.description ?? '',
      ...(original.inputSchema !== undefined ? { inputSchema: original.inputSchema as never } : {}),
      ...(original.outputSchema !== undefined ? { outputSchema: original.outputSchema as never } : {}),
      // The server's verdict decides; a tool-level function overrides any call-level requireToolApproval.
      requireApproval: async (input: unknown) => needsApproval(binding, name, input),
      execute: async (input: unknown, context: unknown) => gatedExecute(binding, name, body, input, context),
    });
    GATED.add(gated);
    copies[key] = gated;
  }
  return copies as { [K in keyof T]: T[K] };
}

/** The neutral call for one tool call of `scope`'s run. */
export function toolCall(scope: RunScope, tool: string, args: JsonObject, callId: string | null): ToolCall {
  const context: JsonObject = { ...scope.context };
  if (scope.requestedBy !== null) context.requested_by = scope.requestedBy;
  return { framework: FRAMEWORK, tool, args, call_id: callId, run: scope.run, session: scope.session, agent: scope.agent, context };
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.getPrototypeOf(value) === Object.prototype;
}

async function needsApproval(binding: Binding, tool: string, input: unknown): Promise<boolean> {
  const scope = currentScope();
  // Outside a run, or with arguments that are no JSON object, the gated execute refuses: no approval to ask.
  if (scope === undefined || !isJsonObject(input)) return false;
  return (await binding.client.evaluate(toolCall(scope, tool, input, null))).kind === 'ask';
}

async function gatedExecute(binding: Binding, tool: string, body: Body, input: unknown, context: unknown): Promise<unknown> {
  const scope = currentScope();
  if (scope === undefined) {
    await binding.client.recordOutcome({ request_id: null, ran: false, error: OUTSIDE_RUN(tool), call: { framework: FRAMEWORK, tool, args: {} } });
    return OUTSIDE_RUN(tool);
  }
  try {
    return await answer(binding, scope, tool, body, input, context);
  } catch (error) {
    // Mastra would hand a throwing execute's error to the model; crossgate fails the run instead.
    scope.failures.push(error instanceof Error ? error : new Error(String(error)));
    throw error;
  }
}

async function answer(binding: Binding, scope: RunScope, tool: string, body: Body, input: unknown, context: unknown): Promise<unknown> {
  const { client } = binding;
  if (!isJsonObject(input)) return MALFORMED(tool);
  const callId = (context as { agent?: { toolCallId?: unknown } } | undefined)?.agent?.toolCallId;
  if (typeof callId !== 'string') return OUTSIDE_RUN(tool);
  const call = toolCall(scope, tool, input, callId);
  const run = async (args: JsonObject) => body(args, context);
  const id = callRequestId(scope.run, callId);
  const request = scope.decided.get(id) ?? (await find(client, id));
  if (request === null) {
    // No request for this call: only a call the policy allows now may run.
    const verdict = await client.evaluateToRun(call);
    if (verdict.kind === 'allow') return (await runRecorded(client, null, input, run, { call })).result;
    const message = verdict.kind === 'deny' ? denyMessage(tool, verdict) : NOT_REVIEWED(tool);
    await client.recordOutcome({ request_id: null, ran: false, error: message, call });
    return message;
  }
  const checked = await runChecked(client, request, input, run, { actor: FRAMEWORK, call });
  return checked.ran ? checked.result : checked.message;
}

export async function find(client: AgentClient, id: string): Promise<ApprovalRequest | null> {
  try {
    return await client.get(id);
  } catch (error) {
    if (error instanceof NotFoundError) return null;
    throw error;
  }
}
