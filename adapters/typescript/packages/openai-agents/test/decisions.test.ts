import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { AgentClient, UnreachableError } from '@crossgate/client';
import { CAPABILITIES, CAPABILITY_TABLE, Gate, type SdkResult } from '@crossgate/openai-agents';
import { AGENT_TOKEN, pythonOps, startServer, TicketStore, type LiveServer } from '@crossgate/testing';
import { Agent, tool } from '@openai/agents';
import { z } from 'zod';

import { FINAL_PREFIX, PlannedModel } from './support/model.js';
import { del, triage } from './support/triage.js';

let server: LiveServer;
let client: AgentClient;
before(async () => {
  server = await startServer();
  client = server.client();
});
after(() => server.stop());

function world(name: string): TicketStore {
  const tickets = new TicketStore(join(server.dir, `${name}.json`));
  tickets.seed(['t1', 't2', 't3', 't4', 't5', 't6', 't7']);
  return tickets;
}

test('the capability table covers the six decisions; all four reviewer answers are offered for every tool', () => {
  assert.deepEqual(CAPABILITY_TABLE.map((c) => c.decision), ['approve', 'edit', 'reject', 'respond', 'remember', 'defer']);
  assert.deepEqual([...CAPABILITIES].sort(), ['approve', 'edit', 'reject', 'respond']);
});

test('approve, edit, reject and respond in one parked turn: each reaches the model, and only the gated tool ran', async () => {
  const tickets = world('four');
  const turn = [del('t3'), del('t1'), del('t4'), del('t5')];
  const { agent } = triage(tickets, [turn]);
  const gate = new Gate({ client, sdkAgent: agent });
  const outcome = await gate.run('Delete the spam tickets.', { run: 'run-four' });
  assert.equal(outcome.status, 'parked');
  assert.equal(outcome.requestIds.length, 4);
  assert.deepEqual(tickets.ids(), ['t1', 't2', 't3', 't4', 't5', 't6', 't7'], 'nothing ran while parked');
  const [approveId, editId, rejectId, respondId] = outcome.requestIds as [string, string, string, string];
  for (const id of outcome.requestIds) assert.deepEqual((await client.get(id)).allowed_decisions.sort(), ['approve', 'edit', 'reject', 'respond']);
  await server.decide(approveId, { kind: 'approve' });
  await server.decide(editId, { kind: 'edit', args: { id: 't2' } });
  await server.decide(rejectId, { kind: 'reject', message: 'Keep t4: it is under audit. Do not retry.' });
  await server.decide(respondId, { kind: 'respond', content: 't5 was archived by hand; nothing to delete.' });

  const resumer = triage(tickets, [turn]);
  const done = await new Gate({ client, sdkAgent: resumer.agent }).resume(outcome.parkedRun);
  assert.equal(done.status, 'finished');
  assert.deepEqual(tickets.ids(), ['t1', 't4', 't5', 't6', 't7']);
  assert.equal(tickets.deleteRuns(), 2, 'the approved and the edited call ran, once each');
  assert.deepEqual(resumer.model.told(), {
    call_t3: 'deleted ticket t3',
    call_t1: 'deleted ticket t2',
    call_t4: 'Keep t4: it is under audit. Do not retry.',
    call_t5: 't5 was archived by hand; nothing to delete.',
  });
  assert.ok(String((done as { result: SdkResult }).result.finalOutput).startsWith(FINAL_PREFIX));
  const statuses = await Promise.all(outcome.requestIds.map(async (id) => (await client.get(id)).status));
  assert.deepEqual(statuses, ['applied', 'applied', 'rejected', 'answered'], 'each decision reached the agent');
  assert.equal((await client.outcome(approveId))?.payload.ran, true);
  assert.equal((await client.outcome(editId))?.payload.result, 'deleted ticket t2');
  assert.equal((await client.outcome(rejectId))?.payload.ran, false);
  assert.equal((await client.outcome(respondId))?.payload.result, 't5 was archived by hand; nothing to delete.');
});

test('remember: an approval remembered for the run lets the next delete of that run through without asking', async () => {
  const tickets = world('remember');
  const turns = [[del('t6')], [del('t7')]];
  const first = await new Gate({ client, sdkAgent: triage(tickets, turns).agent }).run('Delete t6 and t7.', { run: 'run-remember' });
  assert.equal(first.status, 'parked');
  await server.decide(first.requestIds[0]!, { kind: 'approve', remember: { scope: 'run', match: 'tool' } });
  const resumer = triage(tickets, turns);
  const done = await new Gate({ client, sdkAgent: resumer.agent }).resume(first.parkedRun);
  assert.equal(done.status, 'finished');
  assert.deepEqual(tickets.ids(), ['t1', 't2', 't3', 't4', 't5']);
  assert.equal(resumer.model.told().call_t7, 'deleted ticket t7');
  const asked = (await client.listRequests({ run: 'run-remember' })).items.map((r) => r.call.args.id);
  assert.deepEqual(asked, ['t6'], 'the remembered rule answered t7; nobody was asked');
  // The rule is the server's, for that run only: another run asks again.
  const other = await new Gate({ client, sdkAgent: triage(world('remember-2'), [[del('t7')]]).agent }).run('Delete t7.', { run: 'run-other' });
  assert.equal(other.status, 'parked');
});

test('defer: a run waits inline for its reviewer, then goes on in the same call without parking', async () => {
  const tickets = world('inline');
  const { agent, model } = triage(tickets, [[del('t3')]]);
  const running = new Gate({ client, sdkAgent: agent }).run('Delete t3.', { run: 'run-inline', wait: 20 });
  let pending: string | undefined;
  while (pending === undefined) {
    pending = (await client.listRequests({ run: 'run-inline', status: 'pending' })).items[0]?.id;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await server.decide(pending, { kind: 'reject', message: 'Not today.' });
  const done = await running;
  assert.equal(done.status, 'finished');
  assert.equal(model.told().call_t3, 'Not today.');
  assert.deepEqual(tickets.ids(), ['t1', 't2', 't3', 't4', 't5', 't6', 't7']);
  assert.deepEqual(await client.parkedRuns({ run: 'run-inline' }), []);
});

test('a call the policy denies never runs: the model reads the rule\'s reason, and allowed calls run unasked', async () => {
  const ran: string[] = [];
  const sql = tool({
    name: 'execute_sql',
    description: 'Run one SQL statement.',
    parameters: z.object({ query: z.string() }),
    execute: async ({ query }) => {
      ran.push(query);
      return 'ok';
    },
  });
  const model = new PlannedModel([
    [{ name: 'execute_sql', args: { query: 'DROP TABLE tickets' }, callId: 'call_drop' }],
    [{ name: 'execute_sql', args: { query: 'SELECT 1' }, callId: 'call_select' }],
  ]);
  const outcome = await new Gate({ client, sdkAgent: new Agent({ name: 'Sql', tools: [sql], model }) }).run('Clean up.', { run: 'run-sql' });
  assert.equal(outcome.status, 'finished');
  assert.deepEqual(ran, ['SELECT 1']);
  assert.equal(model.told().call_drop, 'crossgate did not run execute_sql: Dropping tables is not allowed. Do not retry.');
  assert.equal(model.told().call_select, 'ok');
});

test('an unreachable server fails closed: the run ends with UnreachableError and nothing ran', async () => {
  const tickets = world('unreachable');
  const dead = new AgentClient({ baseUrl: 'http://127.0.0.1:9', token: AGENT_TOKEN, deadlineMs: 300 });
  const { agent } = triage(tickets, [[del('t3')]]);
  await assert.rejects(new Gate({ client: dead, sdkAgent: agent }).run('Delete t3.'), UnreachableError);
  assert.equal(tickets.deleteRuns(), 0);
});

test('with a pinned authority key, an approval signed with another key runs nothing, and the model is told why', async () => {
  const tickets = world('pinned');
  const [key] = pythonOps<{ pin: string }>([{ op: 'key', key: 'authority' }]);
  const authority = key!.pin;
  const first = await new Gate({ client, sdkAgent: triage(tickets, [[del('t3')]]).agent, authority }).run('Delete t3.', { run: 'run-pinned' });
  assert.equal(first.status, 'parked');
  await server.decide(first.requestIds[0]!, { kind: 'approve' }); // signed with the server's key, not the pinned one
  const resumer = triage(tickets, [[del('t3')]]);
  assert.equal((await new Gate({ client, sdkAgent: resumer.agent, authority }).resume(first.parkedRun)).status, 'finished');
  assert.equal(tickets.deleteRuns(), 0);
  assert.match(resumer.model.told().call_t3 ?? '', /which is not pinned/);
  assert.equal((await client.get(first.requestIds[0]!)).status, 'cancelled', 'the decision was never applied: the gate closed it');
});
