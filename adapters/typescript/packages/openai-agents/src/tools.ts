/**
 * Gate the function tools of an agent graph: `needsApproval` from the server's policy, and a binding wrapper.
 *
 * Every function tool reachable from the starting agent (its tools and its handoff targets, recursively)
 * is replaced in its agent's `tools` list by a copy whose
 *
 * - `needsApproval` asks the server's policy: ask pauses the run, allow and deny do not;
 * - `invoke` is crossgate's, the only caller of the original tool body. It runs a call only if the policy
 *   allows it, or if the server holds an approve or edit decision for that call id whose fingerprint
 *   matches the arguments about to run, and only after the server marked the request applied (once: a 409
 *   there means it ran before, and it does not run again). A deny answers with the policy's reason,
 *   respond with the reviewer's content; neither runs the tool.
 *
 * The user's own tool objects are left as they were.
 */

import {
  type AgentClient,
  type ApprovalRequest,
  ConfigurationError,
  CrossgateError,
  denyMessage,
  fingerprint,
  type JsonObject,
  NotFoundError,
  runChecked,
  runRecorded,
  type ToolCall,
  type VerifiedClient,
} from '@crossgate/client';
import { Agent, Handoff, type FunctionTool, type RunContext, type Tool } from '@openai/agents';

import { FRAMEWORK } from './capabilities.js';
import { MALFORMED, NOT_THROUGH_GATE } from './messages.js';
import { callRequestId, currentScope, keepFailure, type RunScope } from './scope.js';

/** The server and keys the gated tools of one `Gate` consult. */
export interface GateBinding {
  /** The gate's client: it verifies what lets a call run with the gate's pinned keys. */
  readonly client: VerifiedClient;
}

type AnyFunctionTool = FunctionTool<any, any, any>;
type Invoke = AnyFunctionTool['invoke'];
type Details = Parameters<Invoke>[2];

const GATED = new WeakMap<object, { agent: string; original: AnyFunctionTool }>();

/** True for a tool copy crossgate installed (so its invoke is crossgate's). */
export function isGated(tool: unknown): tool is AnyFunctionTool {
  return typeof tool === 'object' && tool !== null && GATED.has(tool);
}

/** The arguments of a call as the model wrote them: a JSON object, else an error naming what is wrong. */
export function parseArgs(raw: string | undefined): JsonObject | string {
  let value: unknown;
  try {
    value = JSON.parse(raw === undefined || raw === '' ? '{}' : raw);
  } catch {
    return 'its arguments are not JSON';
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return 'its arguments are not a JSON object';
  return value as JsonObject;
}

/** The neutral call for one SDK function call: the run's context, and who the run acts for (over any app key). */
export function toolCall(tool: string, agent: string, args: JsonObject, callId: string, scope: RunScope | undefined): ToolCall {
  const context: JsonObject = { ...(scope?.context ?? {}) };
  delete context.requested_by;
  if (scope?.requestedBy) context.requested_by = scope.requestedBy;
  return {
    framework: FRAMEWORK,
    tool,
    args,
    call_id: callId,
    run: scope?.run ?? null,
    session: scope?.session ?? null,
    agent,
    context,
  };
}

/** The request of `requestId`, or null when the server has none (or none of this credential's). */
export async function findRequest(client: AgentClient, requestId: string): Promise<ApprovalRequest | null> {
  try {
    return await client.get(requestId);
  } catch (error) {
    if (error instanceof NotFoundError) return null;
    throw error;
  }
}

/**
 * Gate every function tool reachable from `agent`; returns the agents visited. Idempotent: tools gated
 * before are re-bound to `binding`. Refuses (ConfigurationError) what crossgate cannot gate: hosted,
 * computer, shell, apply-patch tools and MCP servers, so nothing the policy covers runs ungated.
 */
export function install(agent: Agent<any, any>, binding: GateBinding): Agent<any, any>[] {
  const visited: Agent<any, any>[] = [];
  const pending: Agent<any, any>[] = [agent];
  while (pending.length) {
    const current = pending.shift()!;
    if (visited.includes(current)) continue;
    visited.push(current);
    if (current.mcpServers.length) {
      throw new ConfigurationError(
        `agent ${JSON.stringify(current.name)} has MCP servers; their tools are listed at run time and crossgate cannot gate them yet`,
      );
    }
    current.tools = current.tools.map((tool: Tool<any>) => gateTool(tool, current, binding));
    for (const handoff of current.handoffs) pending.push(handoffTarget(handoff, current));
  }
  return visited;
}

function gateTool(tool: Tool<any>, agent: Agent<any, any>, binding: GateBinding): Tool<any> {
  if (tool.type !== 'function') {
    throw new ConfigurationError(
      `tool ${JSON.stringify((tool as { name?: string }).name ?? tool.type)} of agent ${JSON.stringify(agent.name)} is a ` +
        `${tool.type} tool; crossgate gates function tools only`,
    );
  }
  const known = GATED.get(tool);
  const original = known?.original ?? tool;
  const gated: AnyFunctionTool = { ...original };
  gated.needsApproval = approvalPolicy(binding, agent.name, original.name);
  gated.invoke = gatedInvoke(binding, agent.name, original);
  GATED.set(gated, { agent: agent.name, original });
  return gated;
}

function handoffTarget(handoff: Agent<any, any> | Handoff<any, any>, agent: Agent<any, any>): Agent<any, any> {
  if (handoff instanceof Agent) return handoff;
  if (handoff instanceof Handoff && handoff.agent instanceof Agent) return handoff.agent;
  throw new ConfigurationError(`crossgate cannot reach the agent behind a handoff of agent ${JSON.stringify(agent.name)}`);
}

/** The `needsApproval` of a gated tool: true exactly when the server's verdict is ask (and for bad arguments). */
function approvalPolicy(binding: GateBinding, agent: string, tool: string) {
  return async (_context: RunContext, input: unknown, callId?: string): Promise<boolean> => {
    if (input === null || typeof input !== 'object' || Array.isArray(input)) return true; // fail closed: Gate explains
    try {
      const call = toolCall(tool, agent, input as JsonObject, callId ?? '', currentScope());
      return (await binding.client.evaluate(call)).kind === 'ask';
    } catch (error) {
      if (error instanceof CrossgateError) keepFailure(error);
      throw error;
    }
  };
}

function gatedInvoke(binding: GateBinding, agent: string, original: AnyFunctionTool): Invoke {
  return async (runContext: RunContext, input: string, details?: Details) => {
    try {
      return await invokeChecked(binding, agent, original, runContext, input, details);
    } catch (error) {
      // Nothing runs without the server: the error ends the run (the gate raises it, not the SDK's wrapper).
      if (error instanceof CrossgateError) keepFailure(error);
      throw error;
    }
  };
}

async function invokeChecked(
  binding: GateBinding,
  agent: string,
  original: AnyFunctionTool,
  runContext: RunContext,
  input: string,
  details: Details,
): Promise<unknown> {
  const { client } = binding;
  const scope = currentScope();
  const tool = original.name;
  const callId = details?.toolCall?.callId ?? '';
  const args = parseArgs(input);
  if (typeof args === 'string') {
    const message = MALFORMED(tool, args);
    await client.recordOutcome({ request_id: null, ran: false, error: message, call: toolCall(tool, agent, {}, callId, scope) });
    return message;
  }
  const call = toolCall(tool, agent, args, callId, scope);
  const request = await decidedRequest(client, scope, agent, callId);
  if (request === null) return byPolicy(binding, original, runContext, input, details, call, scope);
  const body = (runArgs: JsonObject) => {
    // The model's own text for an approve; the reviewer's arguments for an edit.
    const same = fingerprint(tool, runArgs) === fingerprint(tool, args);
    return original.invoke(runContext, same ? input : JSON.stringify(runArgs), details);
  };
  const answer = await runChecked(client, request, args, body, { actor: FRAMEWORK, call });
  return answer.ran ? answer.result : answer.message;
}

async function decidedRequest(
  client: AgentClient,
  scope: RunScope | undefined,
  agent: string,
  callId: string,
): Promise<ApprovalRequest | null> {
  if (scope === undefined || !callId) return null;
  const id = callRequestId(scope.run, agent, callId);
  const decided = scope.decided.get(id);
  if (decided !== undefined) {
    scope.decided.delete(id); // used once: a second invocation reads the stored request
    return decided;
  }
  return findRequest(client, id);
}

async function byPolicy(
  binding: GateBinding,
  original: AnyFunctionTool,
  runContext: RunContext,
  input: string,
  details: Details,
  call: ToolCall,
  scope: RunScope | undefined,
): Promise<unknown> {
  const { client } = binding;
  const submission = await client.submit(call, { requested_by: scope?.requestedBy ?? null });
  if (submission.request !== null) {
    // An ask with no crossgate decision: approved natively, run outside the gate, or the policy changed mid-run.
    const message = NOT_THROUGH_GATE(call.tool);
    await client.cancel(submission.request.id, message);
    await client.recordOutcome({ request_id: submission.request.id, ran: false, error: message });
    return message;
  }
  if (submission.verdict.kind === 'deny') {
    const message = denyMessage(call.tool, submission.verdict);
    await client.recordOutcome({ request_id: null, ran: false, result: message, call });
    return message;
  }
  const answer = await runRecorded(client, null, call.args, () => original.invoke(runContext, input, details), { call });
  return answer.result;
}
