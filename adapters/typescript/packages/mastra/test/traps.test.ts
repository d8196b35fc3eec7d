import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, beforeEach, test } from 'node:test';

import { ConflictError, type AgentClient } from '@crossgate/client';
import { startServer, TicketStore, type LiveServer } from '@crossgate/testing';
import type { Agent } from '@mastra/core/agent';

import { callRequestId, gatedTools } from '@crossgate/mastra';

import { deleteTool, seedGate, ticketMastra, ticketModel } from './support.js';

let server: LiveServer;
let client: AgentClient;
let tickets: TicketStore;
let db: string;
let n = 0;
before(async () => {
  server = await startServer();
  client = server.client();
});
after(() => server.stop());
beforeEach(() => {
  n += 1;
  tickets = new TicketStore(join(server.dir, `traps-${n}.json`));
  tickets.seed();
  db = join(server.dir, `traps-${n}.db`);
});

async function drain(output: { fullStream: AsyncIterable<unknown> }): Promise<void> {
  for await (const _chunk of output.fullStream) {
    // read to the end
  }
}

async function suspendedOn(agent: Agent, run: string): Promise<void> {
  await drain(await agent.stream('Delete t3.', { runId: run }));
  const { runs } = await agent.listSuspendedRuns();
  assert.ok(runs.some((r) => r.runId === run), 'the run is suspended for approval');
}

test('trap, bare Mastra: two concurrent approveToolCall on one run run the tool twice', async () => {
  const mastra = ticketMastra(db, ticketModel(['t3']), { delete_ticket: deleteTool(tickets) });
  const agent = mastra.getAgent('tickets') as Agent;
  await suspendedOn(agent, 'bare-run');
  const [a, b] = await Promise.all([
    agent.approveToolCall({ runId: 'bare-run', toolCallId: 'call_t3' }),
    agent.approveToolCall({ runId: 'bare-run', toolCallId: 'call_t3' }),
  ]);
  await Promise.all([drain(a), drain(b)]);
  assert.equal(tickets.deleteRuns('t3'), 2, 'reproduced: the tool body ran twice');
});

test('closed through the gate: concurrent resumes from two Mastra instances on one storage run it once', async () => {
  const first = seedGate(client, tickets, db, ticketModel(['t3']));
  const parked = await first.run('Delete t3.', { run: 'gate-run' });
  assert.ok(parked.status === 'parked');
  await server.decide(callRequestId('gate-run', 'call_t3'), { kind: 'approve' });
  const second = seedGate(client, tickets, db, ticketModel(['t3']));
  const settled = await Promise.allSettled([first.resume(parked.parkedRun), second.resume(parked.parkedRun)]);
  assert.equal(settled.filter((s) => s.status === 'fulfilled').length, 1);
  const refused = settled.find((s) => s.status === 'rejected');
  assert.ok(refused?.status === 'rejected' && refused.reason instanceof ConflictError, String(refused));
  assert.equal(tickets.deleteRuns('t3'), 1, 'closed: the tool body ran once');
  await assert.rejects(first.resume(parked.parkedRun), (e: unknown) => e instanceof ConflictError && e.code === 'already_resumed');
});

test('closed: approveToolCall called on the gated agent directly, twice at once, runs nothing', async () => {
  const gate = seedGate(client, tickets, db, ticketModel(['t3']));
  const parked = await gate.run('Delete t3.', { run: 'direct-run' });
  assert.ok(parked.status === 'parked');
  await server.decide(callRequestId('direct-run', 'call_t3'), { kind: 'approve' });
  // Someone holding the Mastra storage approves behind crossgate's back, twice at once.
  const mastra = ticketMastra(db, ticketModel(['t3']), gatedTools(client, { delete_ticket: deleteTool(tickets) }));
  const agent = mastra.getAgent('tickets') as Agent;
  const [a, b] = await Promise.all([
    agent.approveToolCall({ runId: 'direct-run', toolCallId: 'call_t3' }),
    agent.approveToolCall({ runId: 'direct-run', toolCallId: 'call_t3' }),
  ]);
  await Promise.all([drain(a), drain(b)]);
  assert.equal(tickets.deleteRuns(), 0, 'only a gate run passes the check');
  assert.equal((await client.get(callRequestId('direct-run', 'call_t3'))).status, 'decided', 'the decision is not used up');
});
