/**
 * crossgate's handler for the tools of the SDK MCP servers a gate builds: the only caller of their bodies.
 *
 * The CLI tells the handler which tool use it runs (`_meta["claudecode/toolUseId"]`); the gate's hook
 * learnt that tool use's session. A call with a request runs only if its decision allows it now, checked
 * by the server (`/applied`, once) and bound to the arguments about to run; respond answers with the
 * reviewer's content. A call with no request runs only if the policy allows it: a call the policy sends
 * to a person, with no decision (the gate's callbacks bypassed, say by `allowedTools`), is refused.
 */

import { createSdkMcpServer, type McpSdkServerConfigWithInstance, type SdkMcpToolDefinition } from '@anthropic-ai/claude-agent-sdk';
import {
  applyDecision,
  CrossgateError,
  denyMessage,
  runRecorded,
  type JsonObject,
  type VerifiedClient,
} from '@crossgate/client';

import { FRAMEWORK } from './capabilities.js';
import { callRequestId, findRequest, isObject, short, toolCall, type SeenCall, type SessionScope } from './calls.js';
import { FAIL_CLOSED, NOT_THROUGH_GATE } from './messages.js';
import { inToolName, MCP_PREFIX, type ToolName } from './names.js';

type ToolResult = Awaited<ReturnType<SdkMcpToolDefinition['handler']>>;

/** What the handlers of one gate share with its callbacks. */
export interface GateCore {
  /** The gate's client: it verifies what lets a call run with the gate's pinned keys. */
  readonly client: VerifiedClient;
  /** tool_use_id -> what the hook saw of it. */
  readonly calls: Map<string, SeenCall>;
}

const OUTSIDE: SessionScope = Object.freeze({ agent: null, requestedBy: null, context: {} });
export const TOOL_USE_META = 'claudecode/toolUseId';

/** An SDK MCP server (built for one session) whose tools run only through crossgate's check. */
export function gatedServer(core: GateCore, server: string, tools: readonly SdkMcpToolDefinition<any>[]): McpSdkServerConfigWithInstance {
  return createSdkMcpServer({ name: server, tools: tools.map((tool) => gatedTool(core, server, tool)) });
}

function gatedTool(core: GateCore, server: string, tool: SdkMcpToolDefinition<any>): SdkMcpToolDefinition<any> {
  const name: ToolName = { claude: `${MCP_PREFIX}${inToolName(server)}__${tool.name}`, tool: tool.name, server };
  return {
    ...tool,
    handler: async (args: unknown, extra: unknown) => {
      try {
        return await checked(core, name, tool, isObject(args) ? args : {}, extra);
      } catch (error) {
        if (!(error instanceof CrossgateError)) throw error;
        return failure(FAIL_CLOSED(short(error)));
      }
    },
  };
}

async function checked(core: GateCore, name: ToolName, tool: SdkMcpToolDefinition<any>, args: JsonObject, extra: unknown): Promise<ToolResult> {
  const { client } = core;
  const toolUseId = toolUseIdOf(extra);
  const seen = toolUseId === null ? undefined : core.calls.get(toolUseId);
  const call = toolCall(name, args, toolUseId ?? '', seen?.session ?? null, seen?.scope ?? OUTSIDE);
  const body = (runArgs: JsonObject) => tool.handler(runArgs, extra);
  const summary = (result: ToolResult) => resultText(result).slice(0, 2000);
  const request = seen !== undefined && toolUseId !== null ? await findRequest(client, callRequestId(seen.session, toolUseId)) : null;
  if (request !== null) {
    const applied = await applyDecision(client, request, args, { actor: FRAMEWORK });
    if (applied.responded) {
      await client.recordOutcome({ request_id: request.id, ran: false, result: applied.message });
      return text(applied.message);
    }
    if (!applied.run) return failure(applied.message);
    return (await runRecorded(client, request, applied.args ?? {}, body, { call, summary })).result as ToolResult;
  }
  const submission = await client.submit(call, { requested_by: seen?.scope.requestedBy ?? null });
  if (submission.request !== null) {
    const message = NOT_THROUGH_GATE(name.tool);
    await client.cancel(submission.request.id, message);
    await client.recordOutcome({ request_id: submission.request.id, ran: false, error: message });
    return failure(message);
  }
  if (submission.verdict.kind === 'deny') {
    const message = denyMessage(name.tool, submission.verdict);
    await client.recordOutcome({ request_id: null, ran: false, result: message, call });
    return failure(message);
  }
  return (await runRecorded(client, null, args, body, { call, summary })).result as ToolResult;
}

function toolUseIdOf(extra: unknown): string | null {
  const meta = isObject(extra) ? (extra as { _meta?: unknown })._meta : undefined;
  const id = isObject(meta) ? meta[TOOL_USE_META] : undefined;
  return typeof id === 'string' && id ? id : null;
}

function text(message: string): ToolResult {
  return { content: [{ type: 'text', text: message }] };
}

function failure(message: string): ToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

function resultText(result: ToolResult): string {
  const content = (result as { content?: unknown }).content;
  if (!Array.isArray(content)) return JSON.stringify(result);
  return content.map((block: { type?: string; text?: string }) => (block.type === 'text' ? (block.text ?? '') : `[${block.type}]`)).join('');
}
