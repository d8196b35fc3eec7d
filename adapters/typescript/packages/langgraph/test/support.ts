/** The LangGraph.js test world: a hand-built model → tools graph, and a graph whose node asks with requestApproval. */

import { type VerifiedClient } from '@crossgate/client';
import { TicketStore } from '@crossgate/testing';
import { type ScriptedCall, ScriptedModel } from '@crossgate/testing/langchain';
import { AIMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { Annotation, type BaseCheckpointSaver, END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { z } from 'zod';

import { gatedToolNode, requestApproval } from '@crossgate/langgraph';

export { REJECTION } from '@crossgate/testing/langchain';

export const seedCalls: ScriptedCall[] = [
  { id: 'call_t3', name: 'delete_ticket', args: { id: 't3' } },
  { id: 'call_t1', name: 'delete_ticket', args: { id: 't1' } },
];

export function deleteTool(tickets: TicketStore) {
  return tool(async ({ id }: { id: string }) => tickets.delete(id), {
    name: 'delete_ticket',
    description: 'Delete a ticket by id.',
    schema: z.object({ id: z.string() }),
  });
}

export interface Checkpoints {
  readonly saver: BaseCheckpointSaver;
  /** Ends the PostgreSQL saver's connection pool (which keeps a process alive); nothing for SQLite. */
  close(): Promise<void>;
}

/**
 * The checkpointer at `spec`, as an app opens it at start: a PostgreSQL URL whose `schema` parameter names
 * the schema of its tables (set up, if not yet), else a SQLite file.
 */
export async function openCheckpoints(spec: string): Promise<Checkpoints> {
  if (!/^postgres(ql)?:\/\//.test(spec)) return { saver: SqliteSaver.fromConnString(spec), close: async () => {} };
  const url = new URL(spec);
  const schema = url.searchParams.get('schema') ?? 'public';
  url.searchParams.delete('schema');
  const saver = PostgresSaver.fromConnString(url.toString(), { schema });
  await saver.setup();
  return { saver, close: () => saver.end() };
}

/** model → tools (crossgate's gated tool node) → model, on `checkpoints`. */
export function toolGraph(client: VerifiedClient, tickets: TicketStore, checkpoints: BaseCheckpointSaver, model = new ScriptedModel(seedCalls)) {
  const graph = new StateGraph(MessagesAnnotation)
    .addNode('model', async (state) => ({ messages: [await model.invoke(state.messages)] }))
    .addNode('tools', gatedToolNode([deleteTool(tickets)], { client }))
    .addEdge(START, 'model')
    .addConditionalEdges('model', (state) => ((state.messages.at(-1) as AIMessage).tool_calls?.length ? 'tools' : END), ['tools', END])
    .addEdge('tools', 'model')
    .compile({ checkpointer: checkpoints, name: 'tickets' });
  return { model, graph };
}

const TicketState = Annotation.Root({
  ticket: Annotation<string>,
  outcome: Annotation<string>,
});

/** One node: ask crossgate about deleting `state.ticket`, then do what the decision says. `runs` counts node runs. */
export function approvalGraph(client: VerifiedClient, tickets: TicketStore, checkpoints: string, runs: { count: number }) {
  return new StateGraph(TicketState)
    .addNode('delete_ticket', async (state) => {
      runs.count += 1;
      const decision = await requestApproval(client, 'delete_ticket', { id: state.ticket }, { argsSchema: z.object({ id: z.string() }) });
      if (decision.kind === 'reject') return { outcome: decision.message };
      if (decision.kind === 'respond') return { outcome: decision.content };
      return { outcome: tickets.delete(String(decision.args.id)) };
    })
    .addEdge(START, 'delete_ticket')
    .addEdge('delete_ticket', END)
    .compile({ checkpointer: SqliteSaver.fromConnString(checkpoints), name: 'ticket-node' });
}
