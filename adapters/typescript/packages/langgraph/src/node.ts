/**
 * `gatedToolNode`: a tool node for a hand-built graph whose calls go through crossgate. One model
 * turn's calls are reviewed together (one interrupt for the asked ones), then each call the review let
 * through runs in the guard, which alone calls the tool.
 */

import { type AgentClient, type AuthorityPin, verifiedClient } from '@crossgate/client';
import { AIMessage, type BaseMessage, ToolMessage } from '@langchain/core/messages';
import type { StructuredToolInterface } from '@langchain/core/tools';

import { FRAMEWORK } from './capabilities.js';
import { guardedRun } from './guard.js';
import { reviewCalls } from './review.js';

export interface ToolNodeOptions {
  client: AgentClient;
  authority?: AuthorityPin;
  agent?: string;
}

/** A node `(state) => { messages }` running the last AI message's tool calls behind crossgate. */
export function gatedToolNode(tools: readonly StructuredToolInterface[], options: ToolNodeOptions) {
  const client = verifiedClient(options.client, options.authority);
  const byName = new Map(tools.map((t) => [t.name, t]));
  const framework = { framework: FRAMEWORK, agent: options.agent ?? null };
  return async (state: { messages: BaseMessage[] }): Promise<{ messages: ToolMessage[] }> => {
    const last = [...state.messages].reverse().find((m) => AIMessage.isInstance(m));
    const calls = (last as AIMessage | undefined)?.tool_calls ?? [];
    const proposed = calls.map((c) => ({ id: c.id ?? '', name: c.name, args: c.args, schema: byName.get(c.name)?.schema }));
    const reviewed = await reviewCalls(client, proposed, framework);
    const messages: ToolMessage[] = [];
    for (const item of reviewed) {
      const { call } = item;
      if (!item.run) {
        messages.push(new ToolMessage({ content: item.message, name: call.name, tool_call_id: call.id, status: item.status }));
        continue;
      }
      const tool = byName.get(call.name);
      if (tool === undefined) {
        messages.push(new ToolMessage({ content: `Error: tool ${call.name} does not exist.`, name: call.name, tool_call_id: call.id, status: 'error' }));
        continue;
      }
      const run = async (args: Record<string, unknown>) => {
        const output: unknown = await tool.invoke({ type: 'tool_call', id: call.id, name: call.name, args });
        return output instanceof ToolMessage ? output : new ToolMessage({ content: String(output), name: call.name, tool_call_id: call.id });
      };
      messages.push((await guardedRun(client, call, run, framework)) as ToolMessage);
    }
    return { messages };
  };
}
