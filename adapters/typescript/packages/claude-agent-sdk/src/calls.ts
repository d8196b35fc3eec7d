/** The neutral call of one Claude tool use, its request id, and what the gate remembers of each tool use. */

import { NotFoundError, requestId, type AgentClient, type ApprovalRequest, type JsonObject, type ToolCall } from '@crossgate/client';

import { FRAMEWORK, TAG } from './capabilities.js';
import type { ToolName } from './names.js';

/** Who a session acts for and the app's context of its calls: set by `Gate.run`, parked with a deferred call. */
export interface SessionScope {
  readonly agent: string | null;
  readonly requestedBy: string | null;
  readonly context: JsonObject;
}

/** What the hook (or canUseTool) learnt of a tool use, for the callbacks after it and crossgate's handler. */
export interface SeenCall {
  readonly session: string | null;
  readonly name: ToolName;
  readonly scope: SessionScope;
}

/**
 * The request id of one tool use of one session (Python's `crossgate_claude._translate.request_id`). The
 * CLI asks again for the same `tool_use_id` when a deferred session is resumed, so it finds its request.
 */
export function callRequestId(session: string | null, toolUseId: string): string {
  return requestId(TAG, session ?? '', toolUseId);
}

/** The neutral call: the run and session are the Claude session id; an MCP tool's server goes in the context. */
export function toolCall(
  name: ToolName,
  args: JsonObject,
  toolUseId: string,
  session: string | null,
  scope: SessionScope,
  extra: Record<string, unknown> = {},
): ToolCall {
  const context: JsonObject = {};
  const entries: [string, unknown][] = [
    ...Object.entries(scope.context).filter(([key]) => key !== 'requested_by'),
    ['requested_by', scope.requestedBy],
    ...Object.entries(extra),
    ['claude_tool', name.server === null ? null : name.claude],
    ['mcp_server', name.server],
  ];
  for (const [key, value] of entries) if (value !== null && value !== undefined) context[key] = value as JsonObject[string];
  return { framework: FRAMEWORK, tool: name.tool, args, call_id: toolUseId, run: session, session, agent: scope.agent, context };
}

export function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The request of `id`, or null when the server has none (or none of this credential's). */
export async function findRequest(client: AgentClient, id: string): Promise<ApprovalRequest | null> {
  try {
    return await client.get(id);
  } catch (error) {
    if (error instanceof NotFoundError) return null;
    throw error;
  }
}

export function short(error: unknown): string {
  const text = error instanceof Error ? error.message || error.name : String(error);
  return text.length <= 200 ? text : `${text.slice(0, 199)}…`;
}
