/**
 * The LangChain.js test world: a scripted chat model (LangChain's own `BaseChatModel` interface, no
 * network) that proposes tool calls in its first turn and then answers with what it read, the seed's
 * delete_ticket tool, and the HITL overview's three tools.
 */

import type { AgentClient } from '@crossgate/client';
import { TicketStore } from '@crossgate/testing';
import { type ScriptedCall, ScriptedModel } from '@crossgate/testing/langchain';
import { tool } from '@langchain/core/tools';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { createAgent } from 'langchain';
import { z } from 'zod';

import { crossgateMiddleware, type InterruptOn } from '@crossgate/langchain';

export { ScriptedModel, toolResults } from '@crossgate/testing/langchain';
export type { ScriptedCall } from '@crossgate/testing/langchain';

export { REJECTION } from '@crossgate/testing/langchain';

export function deleteTool(tickets: TicketStore) {
  return tool(async ({ id }: { id: string }) => tickets.delete(id), {
    name: 'delete_ticket',
    description: 'Delete a ticket by id.',
    schema: z.object({ id: z.string() }),
  });
}

export const seedCalls: ScriptedCall[] = [
  { id: 'call_t3', name: 'delete_ticket', args: { id: 't3' } },
  { id: 'call_t1', name: 'delete_ticket', args: { id: 't1' } },
];

/** The seed agent: delete_ticket behind crossgate, on a SQLite checkpointer at `checkpoints`. */
export function seedAgent(client: AgentClient, tickets: TicketStore, checkpoints: string, model = new ScriptedModel(seedCalls)) {
  const tools = [deleteTool(tickets)];
  return {
    model,
    agent: createAgent({
      model,
      tools,
      middleware: [crossgateMiddleware({ client, tools })],
      checkpointer: SqliteSaver.fromConnString(checkpoints),
    }),
  };
}

/** The LangChain HITL overview's three tools; each body logs that it ran. */
export function overviewTools(ran: string[]) {
  return [
    tool(async ({ path, content }: { path: string; content: string }) => (ran.push(`write_file:${path}`), `wrote ${content.length} bytes to ${path}`), {
      name: 'write_file',
      description: 'Write a file.',
      schema: z.object({ path: z.string(), content: z.string() }),
    }),
    tool(async ({ query }: { query: string }) => (ran.push(`execute_sql:${query}`), 'ok'), {
      name: 'execute_sql',
      description: 'Run SQL.',
      schema: z.object({ query: z.string() }),
    }),
    tool(async ({ query }: { query: string }) => (ran.push(`read_data:${query}`), 'rows: 3'), {
      name: 'read_data',
      description: 'Read data.',
      schema: z.object({ query: z.string() }),
    }),
  ];
}

/** The overview's `interruptOn`: write_file any decision, execute_sql approve or reject, read_data none. */
export const OVERVIEW_INTERRUPT_ON: InterruptOn = {
  write_file: true,
  execute_sql: { allowedDecisions: ['approve', 'reject'], description: 'SQL statements need DBA approval' },
  read_data: false,
};

export const overviewCalls: ScriptedCall[] = [
  { id: 'call_write', name: 'write_file', args: { path: 'report.txt', content: 'hello' } },
  { id: 'call_sql', name: 'execute_sql', args: { query: 'DELETE FROM old_rows' } },
  { id: 'call_read', name: 'read_data', args: { query: 'SELECT 1' } },
];
