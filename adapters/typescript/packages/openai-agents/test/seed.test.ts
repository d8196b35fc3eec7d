import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { startServer, TicketStore, type LiveServer } from '@crossgate/testing';

import { agentProcess } from './support/processes.js';
import { REJECTION } from './support/triage.js';

let server: LiveServer;
before(async () => {
  server = await startServer();
});
after(() => server.stop());

test('seed 003 in three processes: park, decide with the crossgate CLI through the server (reviewer token), resume; t3 deleted, t1 kept, the model reads the rejection verbatim', async () => {
  const path = join(server.dir, 'seed.json');
  const tickets = new TicketStore(path);
  tickets.seed(['t1', 't2', 't3']);

  const first = await agentProcess(server, path, 'park', 'run-seed');
  assert.equal(first.status, 'parked');
  const [t3, t1] = first.requestIds as [string, string];
  assert.deepEqual(tickets.ids(), ['t1', 't2', 't3'], 'both tickets are present while the run is parked');
  const client = server.client();
  assert.deepEqual((await client.get(t3)).call.args, { id: 't3' });
  assert.equal((await client.get(t3)).call.framework, 'openai-agents-ts');

  const approved = await server.reviewerCli('approve', t3);
  assert.equal(approved.status, 0, approved.stderr);
  const rejected = await server.reviewerCli('reject', t1, '--message', REJECTION);
  assert.equal(rejected.status, 0, rejected.stderr);

  const done = await agentProcess(server, path, 'resume', String(first.parkedRun));
  assert.equal(done.status, 'finished');
  assert.deepEqual(tickets.ids(), ['t1', 't2']);
  assert.equal(tickets.deleteRuns('t3'), 1);
  assert.deepEqual(done.told, { call_t3: 'deleted ticket t3', call_t1: REJECTION });
  assert.ok(String(done.final).includes(JSON.stringify(REJECTION).slice(1, -1)), 'the final answer was written after reading it');

  const again = await agentProcess(server, path, 'resume', String(first.parkedRun));
  assert.equal(again.error, 'ConflictError', 'a parked run is resumed once');
  assert.equal(tickets.deleteRuns(), 1);
});

test('two processes resuming one parked run at once: one resumes it, the other is refused, the delete ran once', async () => {
  const path = join(server.dir, 'race.json');
  const tickets = new TicketStore(path);
  tickets.seed(['t1', 't2', 't3']);
  const first = await agentProcess(server, path, 'park', 'run-race');
  const [t3, t1] = first.requestIds as [string, string];
  await server.decide(t3, { kind: 'approve' });
  await server.decide(t1, { kind: 'approve' });
  const results = await Promise.all([1, 2].map(() => agentProcess(server, path, 'resume', String(first.parkedRun))));
  assert.equal(results.filter((r) => r.status === 'finished').length, 1, JSON.stringify(results));
  assert.ok(results.filter((r) => r.status !== 'finished').every((r) => r.error === 'ConflictError'), JSON.stringify(results));
  assert.equal(tickets.deleteRuns('t3'), 1);
  assert.equal(tickets.deleteRuns('t1'), 1);
});
