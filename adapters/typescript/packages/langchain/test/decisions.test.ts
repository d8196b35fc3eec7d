import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import type { Parked } from '@crossgate/client';
import { startServer, TicketStore, type LiveServer } from '@crossgate/testing';

import { callRequestId, Gate } from '@crossgate/langchain';

import { ScriptedModel, seedAgent, toolResults } from './support.js';

let server: LiveServer;
before(async () => {
  server = await startServer();
});
after(() => server.stop());

function ticketGate(tickets: TicketStore, ids: string[], db: string) {
  const client = server.client();
  const model = new ScriptedModel(ids.map((id) => ({ id: `call_${id}`, name: 'delete_ticket', args: { id } })));
  const { agent } = seedAgent(client, tickets, join(server.dir, db), model);
  return { model, gate: new Gate({ client, graph: agent, agent: 'tickets', authority: server.pin ?? undefined }) };
}

const ask = (ids: string[]) => ({ messages: [{ role: 'user', content: `Delete ${ids.join(' and ')}.` }] });

test('respond: the model reads the reviewer’s content as the tool’s result, and the tool does not run', async () => {
  const tickets = new TicketStore(join(server.dir, 'respond.json'));
  tickets.seed();
  const { model, gate } = ticketGate(tickets, ['t3'], 'respond.db');
  const parked = (await gate.run(ask(['t3']), { thread: 'respond' })) as Parked;
  await server.decide(callRequestId('respond', 'call_t3'), { kind: 'respond', content: 't3 is archived; nothing to delete.' });
  assert.equal((await gate.resume(parked.parkedRun)).status, 'finished');
  assert.deepEqual(toolResults(model.prompts.at(-1) ?? []).call_t3, { content: 't3 is archived; nothing to delete.', status: 'success' });
  assert.equal(tickets.deleteRuns(), 0);
  assert.equal((await server.client().get(callRequestId('respond', 'call_t3'))).status, 'answered');
});

test('remember: an approval remembered for the tool is a standing rule; later runs of the session delete without asking', async () => {
  const tickets = new TicketStore(join(server.dir, 'remember.json'));
  tickets.seed();
  const first = ticketGate(tickets, ['t3'], 'remember.db');
  const parked = (await first.gate.run(ask(['t3']), { thread: 'remember', session: 'session-r' })) as Parked;
  await server.decide(callRequestId('remember', 'call_t3'), { kind: 'approve', remember: { scope: 'session', match: 'tool' } });
  assert.equal((await first.gate.resume(parked.parkedRun)).status, 'finished');
  const later = ticketGate(tickets, ['t2'], 'remember.db');
  const done = await later.gate.run(ask(['t2']), { thread: 'remembered', session: 'session-r' });
  assert.equal(done.status, 'finished', 'the standing rule allows it: no request, no park');
  assert.deepEqual(tickets.ids(), ['t1']);
  assert.equal((await server.client().listRequests({ run: 'remembered' })).items.length, 0);
  const elsewhere = ticketGate(tickets, ['t1'], 'remember.db');
  assert.equal((await elsewhere.gate.run(ask(['t1']), { thread: 'other-session' })).status, 'parked', 'another session still asks');
});
