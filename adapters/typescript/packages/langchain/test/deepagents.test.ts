/**
 * Deep Agents (npm `deepagents` 1.10.2, the newest whose peers fit `@langchain/core` 1.4's langsmith):
 * a subagent's calls through `crossgateMiddleware`. The main agent's `task` call runs the `cleaner`
 * subagent; its two deletes pause the whole thread in crossgate's queue, a reviewer approves t3 and
 * rejects t1, and a fresh agent on the same SQLite checkpoints (as another process has) resumes it
 * once: t3 deleted once, t1 kept, the subagent reads the rejection verbatim. Deep Agents' own
 * `interruptOn` is not given: it would add LangChain's bare HITL middleware beside crossgate's.
 */

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { type Parked, verifiedClient } from '@crossgate/client';
import { startServer, TicketStore, type LiveServer } from '@crossgate/testing';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { createDeepAgent } from 'deepagents';

import { callRequestId, crossgateMiddleware, Gate } from '@crossgate/langchain';

import { deleteTool, REJECTION, ScriptedModel, seedCalls, toolResults } from './support.js';

let server: LiveServer;
before(async () => {
  server = await startServer();
});
after(() => server.stop());

const TASK = { id: 'call_task', name: 'task', args: { description: 'Delete tickets t3 and t1.', subagent_type: 'cleaner' } };

/** A deep agent whose `cleaner` subagent holds delete_ticket behind crossgate; a new one per "process". */
function deepAgent(tickets: TicketStore, checkpoints: string) {
  const client = verifiedClient(server.client(), server.pin);
  const tools = [deleteTool(tickets)];
  const cleaner = new ScriptedModel(seedCalls);
  const agent = createDeepAgent({
    model: new ScriptedModel([TASK]),
    tools: [],
    subagents: [
      { name: 'cleaner', description: 'Deletes support tickets.', systemPrompt: 'You delete tickets.', model: cleaner, tools, middleware: [crossgateMiddleware({ client, tools })] },
    ],
    checkpointer: SqliteSaver.fromConnString(checkpoints),
    name: 'deep-tickets',
  });
  return { cleaner, gate: new Gate({ client, graph: agent, agent: 'deep-tickets' }) };
}

test('deepagents: the subagent’s calls park the thread; approve t3, reject t1, one resume from a fresh agent', { timeout: 300_000 }, async () => {
  const tickets = new TicketStore(join(server.dir, 'deep.json'));
  tickets.seed();
  const checkpoints = join(server.dir, 'deep.db');
  const thread = 'deep-run';
  const parked = (await deepAgent(tickets, checkpoints).gate.run({ messages: [{ role: 'user', content: 'Clean up t3 and t1.' }] }, { thread })) as Parked;
  assert.equal(parked.status, 'parked');
  const t3 = callRequestId(thread, 'call_t3');
  const t1 = callRequestId(thread, 'call_t1');
  assert.deepEqual([...parked.requestIds].sort(), [t1, t3].sort(), 'one request per subagent call');
  const request = await server.client().get(t3);
  assert.equal(request.call.tool, 'delete_ticket');
  assert.deepEqual(request.call.args, { id: 't3' });
  assert.equal(tickets.deleteRuns(), 0, 'nothing runs while pending');

  await server.decide(t3, { kind: 'approve' });
  await server.decide(t1, { kind: 'reject', message: REJECTION });
  const { cleaner, gate } = deepAgent(tickets, checkpoints);
  const done = await gate.resume(parked.parkedRun);
  assert.equal(done.status, 'finished');
  assert.deepEqual(tickets.ids(), ['t1', 't2']);
  assert.equal(tickets.deleteRuns('t3'), 1);
  assert.equal(tickets.deleteRuns('t1'), 0);
  const read = toolResults(cleaner.prompts.at(-1) ?? []);
  assert.deepEqual(read.call_t3, { content: 'deleted ticket t3', status: 'success' });
  assert.deepEqual(read.call_t1, { content: REJECTION, status: 'error' });
  assert.equal((await server.client().get(t3)).status, 'applied');

  await assert.rejects(deepAgent(tickets, checkpoints).gate.resume(parked.parkedRun), /resumed/);
  assert.equal(tickets.deleteRuns(), 1, 'a second resume runs nothing');
});
