/** The seed world for the Mastra tests: a scripted model (doGenerate and doStream), the delete tool, a Mastra on LibSQL. */

import type { AgentClient } from '@crossgate/client';
import { TicketStore } from '@crossgate/testing';
import { Mastra } from '@mastra/core';
import { Agent } from '@mastra/core/agent';
import { createTool } from '@mastra/core/tools';
import { LibSQLStore } from '@mastra/libsql';
import { MockLanguageModelV4 } from 'ai/test';
import { z } from 'zod';

import { Gate, gatedTools } from '@crossgate/mastra';

type CallOptions = Parameters<MockLanguageModelV4['doGenerate']>[0];
type GenerateResult = Awaited<ReturnType<MockLanguageModelV4['doGenerate']>>;

export const REJECTION = 'Keep t1 for the audit. Do not retry.';
const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

/** What the model read as tool results, by tool call id. */
export function toolResults(prompt: CallOptions['prompt']): Record<string, unknown> {
  const found: Record<string, unknown> = {};
  for (const message of prompt) {
    if (message.role !== 'tool') continue;
    for (const part of message.content) if (part.type === 'tool-result') found[part.toolCallId] = part.output;
  }
  return found;
}

function answer(prompt: CallOptions['prompt'], ids: readonly string[]): GenerateResult {
  const results = toolResults(prompt);
  if (Object.keys(results).length === 0) {
    return {
      content: ids.map((id) => ({ type: 'tool-call' as const, toolCallId: `call_${id}`, toolName: 'delete_ticket', input: JSON.stringify({ id }) })),
      finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
      usage,
      warnings: [],
    };
  }
  return { content: [{ type: 'text', text: `I read: ${JSON.stringify(results)}` }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] };
}

/** A model that asks to delete each of `ids` in one step (call ids `call_<id>`), then says what it read. */
export function ticketModel(ids: readonly string[] = ['t3', 't1']): MockLanguageModelV4 {
  return new MockLanguageModelV4({
    doGenerate: async ({ prompt }) => answer(prompt, ids),
    doStream: async ({ prompt }) => {
      const result = answer(prompt, ids);
      const stream = new ReadableStream({
        start(controller) {
          controller.enqueue({ type: 'stream-start', warnings: [] });
          for (const part of result.content) {
            if (part.type === 'text') {
              controller.enqueue({ type: 'text-start', id: 't' });
              controller.enqueue({ type: 'text-delta', id: 't', delta: part.text });
              controller.enqueue({ type: 'text-end', id: 't' });
            } else controller.enqueue(part);
          }
          controller.enqueue({ type: 'finish', finishReason: result.finishReason, usage });
          controller.close();
        },
      });
      return { stream } as Awaited<ReturnType<MockLanguageModelV4['doStream']>>;
    },
  });
}

/** The app's tool, as Mastra users write it: delete_ticket deletes from `tickets`. */
export function deleteTool(tickets: TicketStore) {
  return createTool({
    id: 'delete_ticket',
    description: 'Delete a ticket by id.',
    inputSchema: z.object({ id: z.string() }),
    requireApproval: true,
    execute: async ({ id }: { id: string }) => tickets.delete(id),
  });
}

/** A Mastra with one agent, `tickets`, on a LibSQL file every process of a test shares. */
export function ticketMastra(db: string, model: MockLanguageModelV4, tools: Record<string, unknown>): Mastra {
  const agent = new Agent({ id: 'tickets', name: 'Tickets', instructions: 'You delete tickets.', model: model as never, tools: tools as never });
  return new Mastra({ agents: { tickets: agent }, storage: new LibSQLStore({ id: 'tickets', url: `file:${db}` }), logger: false });
}

/** The seed agent behind crossgate: the gated delete tool on a Mastra over `db`. */
export function seedGate(client: AgentClient, tickets: TicketStore, db: string, model = ticketModel()): Gate {
  const mastra = ticketMastra(db, model, gatedTools(client, { delete_ticket: deleteTool(tickets) }));
  return new Gate({ client, mastra, agentId: 'tickets' });
}
