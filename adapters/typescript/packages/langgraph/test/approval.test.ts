import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { type Parked, verifiedClient } from '@crossgate/client';
import { type DecisionBody, startServer, TicketStore, type LiveServer } from '@crossgate/testing';

import { callRequestId, Gate } from '@crossgate/langgraph';

import { approvalGraph } from './support.js';

let server: LiveServer;
before(async () => {
  server = await startServer();
});
after(() => server.stop());

/** Park a one-node graph on deleting t3, decide it, and resume it on a fresh graph and saver connection. */
async function decideAndResume(thread: string, decision: DecisionBody) {
  const tickets = new TicketStore(join(server.dir, `${thread}.json`));
  tickets.seed();
  const checkpoints = join(server.dir, `${thread}.db`);
  const client = verifiedClient(server.client(), server.pin);
  const runs = { count: 0 };
  const parked = (await new Gate({ client, graph: approvalGraph(client, tickets, checkpoints, runs), agent: 'node' }).run({ ticket: 't3' }, { thread })) as Parked;
  assert.equal(parked.status, 'parked');
  const id = callRequestId(thread, 'delete_ticket:1');
  assert.deepEqual(parked.requestIds, [id], 'the request id derives from the thread, the node and its step');
  const request = await client.get(id);
  assert.equal(request.call.framework, 'langgraph-ts');
  assert.equal(request.call.agent, 'node');
  assert.equal(tickets.deleteRuns(), 0);
  await server.decide(id, decision);
  const gate = new Gate({ client, graph: approvalGraph(client, tickets, checkpoints, runs), agent: 'node' });
  const done = await gate.resume(parked.parkedRun);
  assert.equal(done.status, 'finished');
  return { tickets, runs, outcome: done.status === 'finished' ? String(done.result.outcome) : '' };
}

test('requestApproval: approve runs the node once more and deletes t3 once', async () => {
  const { tickets, runs, outcome } = await decideAndResume('approve', { kind: 'approve' });
  assert.equal(outcome, 'deleted ticket t3');
  assert.equal(tickets.deleteRuns('t3'), 1);
  assert.equal(runs.count, 2, 'the node runs up to the pause, then once more on resume');
});

test('requestApproval: edit returns the reviewer arguments; reject and respond return their text and nothing runs', async () => {
  const edit = await decideAndResume('edit', { kind: 'edit', args: { id: 't2' } });
  assert.equal(edit.outcome, 'deleted ticket t2');
  assert.deepEqual(edit.tickets.ids(), ['t1', 't3']);
  const reject = await decideAndResume('reject', { kind: 'reject', message: 'Keep t3.' });
  assert.equal(reject.outcome, 'Keep t3.');
  assert.equal(reject.tickets.deleteRuns(), 0);
  const respond = await decideAndResume('respond', { kind: 'respond', content: 't3 was archived instead.' });
  assert.equal(respond.outcome, 't3 was archived instead.');
  assert.equal(respond.tickets.deleteRuns(), 0);
});

test('requestApproval: an edit its schema refuses is refused when it is made, and the request stays pending', async () => {
  const tickets = new TicketStore(join(server.dir, 'bad-edit.json'));
  tickets.seed();
  const client = verifiedClient(server.client(), server.pin);
  const graph = approvalGraph(client, tickets, join(server.dir, 'bad-edit.db'), { count: 0 });
  const parked = (await new Gate({ client, graph, agent: 'node' }).run({ ticket: 't3' }, { thread: 'bad-edit' })) as Parked;
  const id = parked.requestIds[0] ?? '';
  await assert.rejects(server.decide(id, { kind: 'edit', args: { id: 3 } }), /422/);
  await assert.rejects(server.decide(id, { kind: 'edit', args: { id: 't2', extra: true } }), /422/);
  assert.equal((await client.get(id)).status, 'pending');
});
