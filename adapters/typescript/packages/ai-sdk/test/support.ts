/** The seed world for the AI SDK tests: a scripted model that deletes tickets, and the delete tool. */

import { AgentClient } from '@crossgate/client';
import { TicketStore } from '@crossgate/testing';
import { stepCountIs, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';

type CallOptions = Parameters<MockLanguageModelV4['doGenerate']>[0];
type GenerateResult = Awaited<ReturnType<MockLanguageModelV4['doGenerate']>>;
import { z } from 'zod';

import { Gate } from '@crossgate/ai-sdk';

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

/**
 * A model that asks to delete each of `ids` in its first step (call ids `call_<id>`), and once it has
 * results, answers with the text of what it read.
 */
export function ticketModel(ids: readonly string[] = ['t3', 't1'], tool_ = 'delete_ticket'): MockLanguageModelV4 {
  return new MockLanguageModelV4({
    doGenerate: async ({ prompt }): Promise<GenerateResult> => {
      const results = toolResults(prompt);
      if (Object.keys(results).length === 0) {
        return {
          content: ids.map((id) => ({ type: 'tool-call', toolCallId: `call_${id}`, toolName: tool_, input: JSON.stringify(tool_ === 'execute_sql' ? { query: id } : { id }) })),
          finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
          usage,
          warnings: [],
        };
      }
      return {
        content: [{ type: 'text', text: `I read: ${JSON.stringify(results)}` }],
        finishReason: { unified: 'stop', raw: 'stop' },
        usage,
        warnings: [],
      };
    },
  });
}

/** The app's tools: delete_ticket (its body deletes from `tickets`), execute_sql, read_ticket. */
export function ticketTools(tickets: TicketStore) {
  return {
    delete_ticket: tool({
      description: 'Delete a ticket by id.',
      inputSchema: z.object({ id: z.string() }),
      execute: async ({ id }: { id: string }) => tickets.delete(id),
    }),
    execute_sql: tool({
      description: 'Run SQL.',
      inputSchema: z.object({ query: z.string() }),
      execute: async ({ query }: { query: string }) => {
        tickets.delete(`sql:${query}`);
        return 'ran';
      },
    }),
  };
}

/** The seed agent: the ticket tools behind crossgate, up to five steps per call (the model reads each result). */
export function seedGate(client: AgentClient, tickets: TicketStore, model = ticketModel()) {
  return new Gate({ client, model, tools: ticketTools(tickets), agent: 'tickets', settings: { stopWhen: stepCountIs(5) } });
}
