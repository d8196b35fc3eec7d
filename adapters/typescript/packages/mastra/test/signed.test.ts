/** The gate pinned to the authority's key, against a server that signs: what it signed runs, nothing forged does. */

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { type AgentClient, verifiedClient } from '@crossgate/client';
import { callRequestId, Gate, gatedTools } from '@crossgate/mastra';
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
import { deleteTool, ticketMastra, ticketModel, toolResults } from './support.js';

let server: LiveServer;
let client: AgentClient;
before(async () => {
  server = await startServer();
  client = server.client();
});
after(() => server.stop());

let n = 0;

/** The seed agent on a Mastra of its own (a fresh LibSQL file), its tools and gate pinned to the server's key. */
function pinnedGate(tickets: TicketStore, model: ReturnType<typeof ticketModel>, db = join(server.dir, `mastra-${(n += 1)}.db`)): Gate {
  const tools = gatedTools(client, { delete_ticket: deleteTool(tickets) }, server.pin!);
  return new Gate({ client, mastra: ticketMastra(db, model, tools), agentId: 'tickets', authority: server.pin! });
}

function lastRead(model: ReturnType<typeof ticketModel>): Record<string, { type: string; value?: string }> {
  return toolResults(model.doStreamCalls.at(-1)!.prompt) as Record<string, { type: string; value?: string }>;
}

const FORGED: Record<string, Forgery> = { t1: 'unsigned', t2: 'retarget', t3: 'other_key' };

test('pinned: the approval the server signed runs; unsigned, re-targeted and other-key approvals run nothing, the model reads why', async () => {
  const tickets = new TicketStore(join(server.dir, 'forged.json'));
  tickets.seed(['t1', 't2', 't3', 't4']);
  const model = ticketModel(['t4', 't1', 't2', 't3']);
  const db = join(server.dir, 'mastra-forged.db');
  const first = await pinnedGate(tickets, model, db).run('Delete t1 to t4.', { run: 'run-forged' });
  assert.equal(first.status, 'parked');
  const id = (ticket: string) => callRequestId('run-forged', `call_${ticket}`);
  await server.decide(id('t4'), { kind: 'approve' });
  await forge(server, ...Object.entries(FORGED).map(([ticket, how]) => ({ requestId: id(ticket), how, source: id('t4') })));
  for (const ticket of Object.keys(FORGED)) assert.equal((await client.get(id(ticket))).status, 'decided', 'the server took each forgery as a decision');

  const done = await pinnedGate(tickets, model, db).resume(first.status === 'parked' ? first.parkedRun : '');
  assert.equal(done.status, 'finished');
  assert.deepEqual(tickets.ids(), ['t1', 't2', 't3']);
  assert.equal(tickets.deleteRuns(), 1, 'only the signed approval ran');
  const read = lastRead(model);
  const logged = await refusals(server);
  assert.deepEqual(read.call_t4, { type: 'text', value: 'deleted ticket t4' });
  for (const [ticket, how] of Object.entries(FORGED)) {
    assert.match(read[`call_${ticket}`]?.value ?? '', new RegExp(REFUSAL), `the model reads the refusal for ${ticket}`);
    const closed = await client.get(id(ticket));
    assert.equal(closed.status, 'cancelled', `${ticket} is closed, so no later resume runs it`);
    assert.match(closed.closed_reason ?? '', new RegExp(REFUSAL));
    assert.equal(logged[id(ticket)], REFUSAL_REASON[how], `the log names why ${ticket} was refused`);
  }
});

test('pinned: a standing rule the server signed lets its call run unasked; an inserted rule, unsigned or signed with another key, runs nothing', async () => {
  const tickets = new TicketStore(join(server.dir, 'rules.json'));
  tickets.seed(['t5', 't6', 't7']);
  const db = join(server.dir, 'mastra-remember.db');
  const asked = await pinnedGate(tickets, ticketModel(['t5']), db).run('Delete t5.', { run: 'run-remember' });
  assert.equal(asked.status, 'parked');
  await server.decide(callRequestId('run-remember', 'call_t5'), { kind: 'approve', remember: { scope: 'forever', match: 'exact' } });
  assert.equal((await pinnedGate(tickets, ticketModel(['t5']), db).resume(asked.status === 'parked' ? asked.parkedRun : '')).status, 'finished');
  await insertRule(server, { id: 'rule_unsigned', effect: 'allow', tool: 'delete_ticket', match: 'pattern', arg_patterns: { id: 't6' } });
  await insertRule(server, { id: 'rule_own_key', effect: 'allow', tool: 'delete_ticket', match: 'pattern', arg_patterns: { id: 't7' } }, 'other_key');
  const probe = await client.evaluate({ framework: 'mastra', tool: 'delete_ticket', args: { id: 't6' } });
  assert.equal(probe.kind, 'allow', 'the server alone would let the forged rule through');

  const model = ticketModel(['t5', 't6', 't7']);
  const outcome = await pinnedGate(tickets, model).run('Delete t5, t6 and t7.', { run: 'run-rules' });
  assert.equal(outcome.status, 'finished', 'nothing was asked');
  assert.equal(tickets.deleteRuns('t5'), 2, 'the remembered (signed) rule let t5 run again');
  assert.equal(tickets.deleteRuns('t6') + tickets.deleteRuns('t7'), 0);
  const read = lastRead(model);
  for (const ticket of ['t6', 't7']) assert.match(read[`call_${ticket}`]?.value ?? '', new RegExp(REFUSAL), `the model reads why ${ticket} did not run`);
  const refused = (await auditEvents(server)).filter((e) => e.kind === 'refused');
  assert.deepEqual(Object.fromEntries(refused.map((e) => [e.payload.rule, e.payload.refused])), { rule_unsigned: 'unsigned', rule_own_key: 'unknown_key' });
});

test('pinned: past the newest state head\'s expiry (a frozen store), a signed approval runs nothing; the model reads why', async () => {
  const tickets = new TicketStore(join(server.dir, 'frozen.json'));
  tickets.seed(['t8']);
  const pinned = verifiedClient(client, server.pin!);
  const db = join(server.dir, 'mastra-frozen.db');
  const model = ticketModel(['t8']);
  const gate = () => new Gate({ client: pinned, mastra: ticketMastra(db, model, gatedTools(pinned, { delete_ticket: deleteTool(tickets) })), agentId: 'tickets' });
  const first = await gate().run('Delete t8.', { run: 'run-frozen' });
  assert.equal(first.status, 'parked');
  const id = callRequestId('run-frozen', 'call_t8');
  await server.decide(id, { kind: 'approve' });
  pinned.heads!.clock = () => new Date(Date.now() + 10 * 60_000); // every head the server signed lasts five minutes
  assert.equal((await gate().resume(first.status === 'parked' ? first.parkedRun : '')).status, 'finished');
  assert.equal(tickets.deleteRuns(), 0, 'nothing ran');
  assert.match(
    lastRead(model).call_t8?.value ?? '',
    /^crossgate did not run delete_ticket: the newest state head signed by the authority expired at .*crossgate server must be running/,
  );
  assert.equal((await refusals(server))[id], 'stale_head');
  assert.equal((await client.get(id)).status, 'cancelled');
});
