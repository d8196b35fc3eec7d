/**
 * `crossgateMiddleware`: LangChain.js `createAgent` middleware that sends each tool call to crossgate.
 *
 * Batched, as LangChain.js 1.5.14's own HITL middleware: after each model turn (`afterModel`) the
 * turn's calls are reviewed together (`reviewCalls`: one interrupt for the asked ones, decisions read
 * from crossgate by request id, never from the resume value or by position). Denied, invalid and
 * rejected calls are answered there; the others go to the tools node, where `wrapToolCall` runs each
 * through crossgate's guard, the only code that calls a tool. Run the agent with a checkpointer, under
 * a `Gate` (which parks the thread and resumes it once).
 */

import { type AgentClient, type AuthorityPin, verifiedClient } from '@crossgate/client';
import { guardedRun, reviewCalls } from '@crossgate/langgraph';
import { AIMessage, type BaseMessage, ToolMessage } from '@langchain/core/messages';
import type { StructuredToolInterface } from '@langchain/core/tools';
import { createMiddleware } from 'langchain';

import { FRAMEWORK } from './capabilities.js';
import { allowedDecisionsFor, type InterruptOn } from './interrupt-on.js';

export interface MiddlewareOptions {
  client: AgentClient;
  /** The agent's tools (their zod schemas validate calls and edits). */
  tools: readonly StructuredToolInterface[];
  /** LangChain's `interruptOn`: each tool's `allowedDecisions` and `argsSchema` go onto its requests. */
  interruptOn?: InterruptOn;
  authority?: AuthorityPin;
  /** The agent name when the run's config names none (a Gate names it). */
  agent?: string;
}

/** The middleware, to list first in `createAgent({ middleware: [...] })`. */
export function crossgateMiddleware(options: MiddlewareOptions) {
  const client = verifiedClient(options.client, options.authority);
  const tools = new Map(options.tools.map((t) => [t.name, t]));
  const where = { framework: FRAMEWORK, agent: options.agent ?? null };
  return createMiddleware({
    name: 'CrossgateMiddleware',
    afterModel: {
      canJumpTo: ['model'],
      hook: async (state: { messages: BaseMessage[] }) => {
        const answered = new Set(state.messages.filter((m) => ToolMessage.isInstance(m)).map((m) => (m as ToolMessage).tool_call_id));
        const last = [...state.messages].reverse().find((m) => AIMessage.isInstance(m)) as AIMessage | undefined;
        const calls = (last?.tool_calls ?? []).filter((c) => c.id !== undefined && !answered.has(c.id));
        if (calls.length === 0) return undefined;
        const proposed = calls.map((c) => {
          const setting = options.interruptOn?.[c.name];
          return {
            id: c.id ?? '',
            name: c.name,
            args: c.args,
            schema: tools.get(c.name)?.schema,
            allowedDecisions: allowedDecisionsFor(options.interruptOn, c.name),
            argsSchema: typeof setting === 'object' ? (setting.argsSchema ?? null) : null,
            description: typeof setting === 'object' && typeof setting.description === 'string' ? setting.description : null,
          };
        });
        const reviewed = await reviewCalls(client, proposed, where);
        const messages = reviewed.flatMap((r) =>
          r.run ? [] : [new ToolMessage({ content: r.message, name: r.call.name, tool_call_id: r.call.id, status: r.status })],
        );
        if (messages.length === 0) return undefined;
        // Every call answered: back to the model (the router would otherwise end the run on a ToolMessage).
        return reviewed.every((r) => !r.run) ? { messages, jumpTo: 'model' as const } : { messages };
      },
    },
    wrapToolCall: async (request, handler) => {
      const call = { id: request.toolCall.id ?? '', name: request.toolCall.name, args: request.toolCall.args, schema: request.tool?.schema ?? tools.get(request.toolCall.name)?.schema };
      const run = async (args: Record<string, unknown>) => handler({ ...request, toolCall: { ...request.toolCall, args } });
      return guardedRun(client, call, run, where);
    },
  });
}
