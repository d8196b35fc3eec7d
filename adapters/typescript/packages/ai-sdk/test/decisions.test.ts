import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, beforeEach, test } from 'node:test';

import { CANCEL_MESSAGE, type AgentClient } from '@crossgate/client';
import { startServer, TicketStore, type LiveServer } from '@crossgate/testing';

import { CAPABILITIES, callRequestId, DECISION_MAPPING, Gate } from '@crossgate/ai-sdk';

import { REJECTION, seedGate, ticketModel, ticketTools, toolResults } from './support.js';

let server: LiveServer;
let client: AgentClient;
let tickets: TicketStore;
let n = 0;
before(async () => {
  server = await startServer();
  client = server.client();
});
after(() => server.stop());
beforeEach(() => {
  tickets = new TicketStore(join(server.dir, `tickets-${++n}.json`));
  tickets.seed();
});

/** Park a run that asks to delete `ids`; returns its gate, model, parked run id and request ids by ticket. */
async function parkedRun(ids: string[], run: string, session?: string) {
  const model = ticketModel(ids);
  const gate = seedGate(client, tickets, model);
  const outcome = await gate.run(`Delete ${ids.join(' and ')}.`, { run, ...(session ? { session } : {}) });
  assert.equal(outcome.status, 'parked');
  const requests = Object.fromEntries(ids.map((id) => [id, callRequestId(run, `call_${id}`)]));
  return { gate, model, parkedRun: outcome.status === 'parked' ? outcome.parkedRun : '', requests };
}

function lastRead(model: ReturnType<typeof ticketModel>): Record<string, unknown> {
  const last = model.doGenerateCalls.at(-1);
  assert.ok(last);
  return toolResults(last.prompt);
}

test('the capability table: all four decisions, each with its SDK mapping', () => {
  assert.deepEqual([...CAPABILITIES].sort(), ['approve', 'edit', 'reject', 'respond']);
  for (const kind of CAPABILITIES) assert.ok(DECISION_MAPPING[kind].length > 20);
});

test('approve runs the call once; reject reaches the model as execution-denied, verbatim', async () => {
  const { gate, model, parkedRun: id, requests } = await parkedRun(['t3', 't1'], 'run-approve');
  assert.deepEqual(tickets.ids(), ['t1', 't2', 't3']);
  assert.equal((await gate.resume(id)).status, 'parked', 'still pending: stays parked');
  await server.decide(requests.t3 ?? '', { kind: 'approve' });
  await server.decide(requests.t1 ?? '', { kind: 'reject', message: REJECTION });
  const outcome = await gate.resume(id);
  assert.equal(outcome.status, 'finished');
  assert.deepEqual(lastRead(model), {
    call_t3: { type: 'text', value: 'deleted ticket t3' },
    call_t1: { type: 'execution-denied', reason: REJECTION },
  });
  assert.deepEqual(tickets.ids(), ['t1', 't2']);
  const t3 = await client.get(requests.t3 ?? '');
  assert.equal(t3.status, 'applied');
  assert.equal((await client.outcome(requests.t3 ?? ''))?.payload.result, 'deleted ticket t3');
  assert.equal((await client.get(requests.t1 ?? '')).status, 'rejected', 'the rejection reached the model');
});

test('edit runs the edited arguments; the model reads what ran', async () => {
  const { gate, model, parkedRun: id, requests } = await parkedRun(['t3'], 'run-edit');
  await server.decide(requests.t3 ?? '', { kind: 'edit', args: { id: 't2' } });
  assert.equal((await gate.resume(id)).status, 'finished');
  assert.deepEqual(tickets.ids(), ['t1', 't3']);
  assert.deepEqual(lastRead(model), { call_t3: { type: 'text', value: 'deleted ticket t2' } });
});

test('respond: the reviewer is the tool; the body does not run', async () => {
  const { gate, model, parkedRun: id, requests } = await parkedRun(['t3'], 'run-respond');
  await server.decide(requests.t3 ?? '', { kind: 'respond', content: 't3 is archived; nothing to delete.' });
  assert.equal((await gate.resume(id)).status, 'finished');
  assert.equal(tickets.deleteRuns(), 0);
  assert.deepEqual(lastRead(model), { call_t3: { type: 'text', value: 't3 is archived; nothing to delete.' } });
});

test('remember: an approval remembered for the tool lets later runs of the session delete without asking', async () => {
  const { gate, parkedRun: id, requests } = await parkedRun(['t3'], 'run-remember', 'session-remember');
  await server.decide(requests.t3 ?? '', { kind: 'approve', remember: { scope: 'session', match: 'tool' } });
  assert.equal((await gate.resume(id)).status, 'finished');
  const later = await seedGate(client, tickets, ticketModel(['t2'])).run('Delete t2.', { run: 'run-remembered', session: 'session-remember' });
  assert.equal(later.status, 'finished', 'the standing rule allows it: no request, no park');
  assert.deepEqual(tickets.ids(), ['t1']);
  const list = await client.listRequests({ run: 'run-remembered' });
  assert.equal(list.items.length, 0);
  const elsewhere = await seedGate(client, tickets, ticketModel(['t1'])).run('Delete t1.', { run: 'run-other-session' });
  assert.equal(elsewhere.status, 'parked', 'another session still asks');
});

test('defer: with an inline wait, a decision made meanwhile finishes the run without parking', async () => {
  const model = ticketModel(['t3']);
  const gate = seedGate(client, tickets, model);
  const id = callRequestId('run-inline', 'call_t3');
  const running = gate.run('Delete t3.', { run: 'run-inline', wait: 20 });
  const started = Date.now();
  while ((await client.listRequests({ run: 'run-inline' })).items.length === 0) {
    assert.ok(Date.now() - started < 15_000, 'the request is stored while the run waits');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await server.decide(id, { kind: 'approve' });
  assert.equal((await running).status, 'finished');
  assert.deepEqual(tickets.ids(), ['t1', 't2']);
});

test('a cancelled request answers as a rejection the model reads', async () => {
  const { gate, model, parkedRun: id, requests } = await parkedRun(['t3'], 'run-cancel');
  await client.cancel(requests.t3 ?? '');
  assert.equal((await gate.resume(id)).status, 'finished');
  assert.deepEqual(lastRead(model), { call_t3: { type: 'execution-denied', reason: CANCEL_MESSAGE } });
  assert.equal(tickets.deleteRuns(), 0);
});

test("a policy deny: the model reads the policy's reason as execution-denied, and nothing runs or waits", async () => {
  const model = ticketModel(['DROP TABLE tickets'], 'execute_sql');
  const gate = seedGate(client, tickets, model);
  const outcome = await gate.run('Clean up.', { run: 'run-deny' });
  assert.equal(outcome.status, 'finished');
  const read = lastRead(model)['call_DROP TABLE tickets'] as { type: string; reason: string };
  assert.equal(read.type, 'execution-denied');
  assert.match(read.reason, /^crossgate did not run execute_sql: Dropping tables is not allowed/);
  assert.equal(tickets.deleteRuns(), 0);
});

test('a parked run resumes only on a gate of its framework and agent', async () => {
  const { parkedRun: id } = await parkedRun(['t3'], 'run-other-agent');
  const other = new Gate({ client, model: ticketModel(), tools: ticketTools(tickets), agent: 'someone-else' });
  await assert.rejects(other.resume(id), /is agent "tickets"'s, not "someone-else"/);
});
