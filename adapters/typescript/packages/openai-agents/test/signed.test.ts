/** The gate pinned to the authority's key, against a server that signs: what it signed runs, nothing forged does. */

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { type AgentClient, verifiedClient } from '@crossgate/client';
import { Gate } from '@crossgate/openai-agents';
import {
  auditEvents,
  forge,
  insertRule,
  REFUSAL,
  REFUSAL_REASON,
  refusals,
  startServer,
  TicketStore,
  type Forgery,
  type LiveServer,
} from '@crossgate/testing';

import { del, triage } from './support/triage.js';
import type { PlannedCall } from './support/model.js';

let server: LiveServer;
let client: AgentClient;
before(async () => {
  server = await startServer();
  client = server.client();
});
after(() => server.stop());

function pinned(tickets: TicketStore, turns: PlannedCall[][]) {
  const { agent, model } = triage(tickets, turns);
  return { gate: new Gate({ client, sdkAgent: agent, authority: server.pin! }), model };
}

const FORGED: Record<string, Forgery> = { t1: 'unsigned', t2: 'retarget', t3: 'other_key' };

test('pinned: the approval the server signed runs; unsigned, re-targeted and other-key approvals run nothing, the model reads why', async () => {
  const tickets = new TicketStore(join(server.dir, 'forged.json'));
  tickets.seed(['t1', 't2', 't3', 't4']);
  const turns = [[del('t4'), del('t1'), del('t2'), del('t3')]];
  const first = await pinned(tickets, turns).gate.run('Delete t1 to t4.', { run: 'run-forged' });
  assert.equal(first.status, 'parked');
  const ids: Record<string, string> = {};
  for (const id of first.status === 'parked' ? first.requestIds : []) ids[String((await client.get(id)).call.args.id)] = id;
  await server.decide(ids.t4!, { kind: 'approve' });
  await forge(server, ...Object.entries(FORGED).map(([ticket, how]) => ({ requestId: ids[ticket]!, how, source: ids.t4! })));
  for (const ticket of Object.keys(FORGED)) assert.equal((await client.get(ids[ticket]!)).status, 'decided', 'the server took each forgery as a decision');

  const resumer = pinned(tickets, turns);
  const done = await resumer.gate.resume(first.status === 'parked' ? first.parkedRun : '');
  assert.equal(done.status, 'finished');
  assert.deepEqual(tickets.ids(), ['t1', 't2', 't3']);
  assert.equal(tickets.deleteRuns(), 1, 'only the signed approval ran');
  const told = resumer.model.told();
  const logged = await refusals(server);
  assert.equal(told.call_t4, 'deleted ticket t4');
  for (const [ticket, how] of Object.entries(FORGED)) {
    assert.match(told[`call_${ticket}`] ?? '', new RegExp(REFUSAL), `the model reads the refusal for ${ticket}`);
    const closed = await client.get(ids[ticket]!);
    assert.equal(closed.status, 'cancelled', `${ticket} is closed, so no later resume runs it`);
    assert.match(closed.closed_reason ?? '', new RegExp(REFUSAL));
    assert.equal(logged[ids[ticket]!], REFUSAL_REASON[how], `the log names why ${ticket} was refused`);
  }
});

test('pinned: a standing rule the server signed lets its call run unasked; an inserted rule, unsigned or signed with another key, runs nothing', async () => {
  const tickets = new TicketStore(join(server.dir, 'rules.json'));
  tickets.seed(['t5', 't6', 't7']);
  const asked = await pinned(tickets, [[del('t5')]]).gate.run('Delete t5.', { run: 'run-remember' });
  assert.equal(asked.status, 'parked');
  await server.decide(asked.status === 'parked' ? asked.requestIds[0]! : '', { kind: 'approve', remember: { scope: 'forever', match: 'exact' } });
  assert.equal((await pinned(tickets, [[del('t5')]]).gate.resume(asked.status === 'parked' ? asked.parkedRun : '')).status, 'finished');
  await insertRule(server, { id: 'rule_unsigned', effect: 'allow', tool: 'delete_ticket', match: 'pattern', arg_patterns: { id: 't6' } });
  await insertRule(server, { id: 'rule_own_key', effect: 'allow', tool: 'delete_ticket', match: 'pattern', arg_patterns: { id: 't7' } }, 'other_key');
  const probe = await client.evaluate({ framework: 'openai-agents-ts', tool: 'delete_ticket', args: { id: 't6' } });
  assert.equal(probe.kind, 'allow', 'the server alone would let the forged rule through');

  const run = pinned(tickets, [[del('t5', 'call_t5_again'), del('t6'), del('t7')]]);
  const outcome = await run.gate.run('Delete t5, t6 and t7.', { run: 'run-rules' });
  assert.equal(outcome.status, 'finished', 'nothing was asked');
  assert.equal(tickets.deleteRuns('t5'), 2, 'the remembered (signed) rule let t5 run again');
  assert.equal(tickets.deleteRuns('t6') + tickets.deleteRuns('t7'), 0);
  const told = run.model.told();
  for (const ticket of ['t6', 't7']) assert.match(told[`call_${ticket}`] ?? '', new RegExp(REFUSAL), `the model reads why ${ticket} did not run`);
  const refused = (await auditEvents(server)).filter((e) => e.kind === 'refused');
  assert.deepEqual(Object.fromEntries(refused.map((e) => [e.payload.rule, e.payload.refused])), { rule_unsigned: 'unsigned', rule_own_key: 'unknown_key' });
});

test('pinned: past the newest state head\'s expiry (a frozen store), a signed approval runs nothing; the model reads why', async () => {
  const tickets = new TicketStore(join(server.dir, 'frozen.json'));
  tickets.seed(['t8']);
  const gateClient = verifiedClient(client, server.pin!);
  const turns = [[del('t8')]];
  const frozenGate = () => {
    const { agent, model } = triage(tickets, turns);
    return { gate: new Gate({ client: gateClient, sdkAgent: agent }), model };
  };
  const first = await frozenGate().gate.run('Delete t8.', { run: 'run-frozen' });
  assert.equal(first.status, 'parked');
  const [id] = first.status === 'parked' ? first.requestIds : [];
  await server.decide(id!, { kind: 'approve' });
  gateClient.heads!.clock = () => new Date(Date.now() + 10 * 60_000); // every head the server signed lasts five minutes
  const resumer = frozenGate();
  assert.equal((await resumer.gate.resume(first.status === 'parked' ? first.parkedRun : '')).status, 'finished');
  assert.equal(tickets.deleteRuns(), 0, 'nothing ran');
  assert.match(
    resumer.model.told().call_t8 ?? '',
    /^crossgate did not run delete_ticket: the newest state head signed by the authority expired at .*crossgate server must be running/,
  );
  assert.equal((await refusals(server))[id!], 'stale_head');
  assert.equal((await client.get(id!)).status, 'cancelled');
});
