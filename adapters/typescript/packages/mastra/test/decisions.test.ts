import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, beforeEach, test } from 'node:test';

import { CANCEL_MESSAGE, type AgentClient } from '@crossgate/client';
import { startServer, TicketStore, type LiveServer } from '@crossgate/testing';

import { CAPABILITIES, callRequestId, DECISION_MAPPING, Gate } from '@crossgate/mastra';

import { deleteTool, REJECTION, seedGate, ticketMastra, ticketModel, toolResults } from './support.js';

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
  tickets = new TicketStore(join(server.dir, `tickets-${n}.json`));
  tickets.seed();
  db = join(server.dir, `mastra-${n}.db`);
});

async function parkedRun(ids: string[], run: string, session?: string) {
  const model = ticketModel(ids);
  const gate = seedGate(client, tickets, db, model);
  const outcome = await gate.run(`Delete ${ids.join(' and ')}.`, { run, ...(session ? { session } : {}) });
  assert.equal(outcome.status, 'parked');
  const requests = Object.fromEntries(ids.map((id) => [id, callRequestId(run, `call_${id}`)]));
  if (outcome.status === 'parked') assert.deepEqual([...outcome.requestIds].sort(), Object.values(requests).sort(), 'every call of the step is asked at once');
  return { gate, model, parkedRun: outcome.status === 'parked' ? outcome.parkedRun : '', requests };
}

function lastRead(model: ReturnType<typeof ticketModel>): Record<string, unknown> {
  const last = model.doStreamCalls.at(-1);
  assert.ok(last);
  return toolResults(last.prompt);
}

test('the capability table: all four decisions, each with its SDK mapping', () => {
  assert.deepEqual([...CAPABILITIES].sort(), ['approve', 'edit', 'reject', 'respond']);
  for (const kind of CAPABILITIES) assert.match(DECISION_MAPPING[kind], /ToolCall/);
});

test('approve runs the call once; decline reaches the model with the reviewer’s text, verbatim', async () => {
  const { gate, model, parkedRun: id, requests } = await parkedRun(['t3', 't1'], 'run-approve');
  assert.deepEqual(tickets.ids(), ['t1', 't2', 't3']);
  await server.decide(requests.t3 ?? '', { kind: 'approve' });
  assert.equal((await gate.resume(id)).status, 'parked', 't1 still pending: stays parked');
  await server.decide(requests.t1 ?? '', { kind: 'reject', message: REJECTION });
  const outcome = await gate.resume(id);
  assert.equal(outcome.status, 'finished');
  assert.deepEqual(lastRead(model), { call_t3: { type: 'text', value: 'deleted ticket t3' }, call_t1: { type: 'text', value: REJECTION } });
  assert.deepEqual(tickets.ids(), ['t1', 't2']);
  assert.equal((await client.get(requests.t3 ?? '')).status, 'applied');
});

test('edit runs the edited arguments; respond answers in place of the tool', async () => {
  const { gate, model, parkedRun: id, requests } = await parkedRun(['t3', 't1'], 'run-edit');
  await server.decide(requests.t3 ?? '', { kind: 'edit', args: { id: 't2' } });
  await server.decide(requests.t1 ?? '', { kind: 'respond', content: 't1 is archived; nothing to delete.' });
  assert.equal((await gate.resume(id)).status, 'finished');
  assert.deepEqual(tickets.ids(), ['t1', 't3']);
  assert.deepEqual(lastRead(model), {
    call_t3: { type: 'text', value: 'deleted ticket t2' },
    call_t1: { type: 'text', value: 't1 is archived; nothing to delete.' },
  });
});

test('remember: an approval remembered for the session lets later runs of it delete without asking', async () => {
  const { gate, parkedRun: id, requests } = await parkedRun(['t3'], 'run-remember', 'session-remember');
  await server.decide(requests.t3 ?? '', { kind: 'approve', remember: { scope: 'session', match: 'tool' } });
  assert.equal((await gate.resume(id)).status, 'finished');
  const later = await seedGate(client, tickets, db, ticketModel(['t2'])).run('Delete t2.', { run: 'run-remembered', session: 'session-remember' });
  assert.equal(later.status, 'finished', 'the standing rule allows it: no approval, no park');
  assert.deepEqual(tickets.ids(), ['t1']);
});

test('a cancelled request answers as a decline the model reads; nothing runs', async () => {
  const { gate, model, parkedRun: id, requests } = await parkedRun(['t3'], 'run-cancel');
  await client.cancel(requests.t3 ?? '');
  assert.equal((await gate.resume(id)).status, 'finished');
  assert.deepEqual(lastRead(model), { call_t3: { type: 'text', value: CANCEL_MESSAGE } });
  assert.equal(tickets.deleteRuns(), 0);
});

test('an agent with a tool crossgate does not gate is refused up front', async () => {
  const mastra = ticketMastra(db, ticketModel(), { delete_ticket: deleteTool(tickets) });
  await assert.rejects(new Gate({ client, mastra, agentId: 'tickets' }).run('Delete t3.'), /tools crossgate does not gate: delete_ticket/);
  assert.equal(tickets.deleteRuns(), 0);
});
