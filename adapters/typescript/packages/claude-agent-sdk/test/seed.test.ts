/** Seed 003 through the real bundled CLI: park, decide with the crossgate CLI, resume, each in its own process. */

import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { startServer, TicketStore, type LiveServer } from '@crossgate/testing';

import { FINAL_TEXT, startMessagesApi, told, type MessagesApi } from './support/messages-api.js';
import { agentProcess, type World } from './support/processes.js';
import { REJECTION } from './support/tickets.js';

let server: LiveServer;
let api: MessagesApi;
before(async () => {
  server = await startServer();
  api = await startMessagesApi(server.dir);
});
after(async () => {
  await api.stop();
  await server.stop();
});

test('seed 003 in separate processes, decided by the key holder with the crossgate CLI: t3 approved and deleted, t1 rejected and kept, the model reads the rejection verbatim', async () => {
  const world: World = {
    server,
    messagesApi: api.baseUrl,
    tickets: join(server.dir, 'tickets.json'),
    cliRoot: join(server.dir, 'cli'),
    work: join(server.dir, 'work'),
  };
  mkdirSync(world.work, { recursive: true });
  const tickets = new TicketStore(world.tickets);
  tickets.seed(['t1', 't2', 't3']);
  const client = server.client();

  // Process 1: the agent runs until the hook defers delete t3; the session is parked on the server.
  const first = await agentProcess(world, 'park');
  assert.equal(first.status, 'parked', JSON.stringify(first));
  const t3 = (first.requestIds as string[])[0]!;
  assert.deepEqual((await client.get(t3)).call.args, { id: 't3' });
  assert.equal((await client.get(t3)).call.framework, 'claude-agent-sdk-ts');
  assert.deepEqual(tickets.ids(), ['t1', 't2', 't3'], 'both tickets are present while parked');

  // Process 2: the authority's key holder approves with the crossgate CLI. Process 3: the session resumes, t3 is deleted,
  // and the model's next call (delete t1) is deferred and parked in turn.
  const approved = await server.operatorCli('approve', t3, '--reviewer', 'alice');
  assert.equal(approved.status, 0, approved.stderr);
  const second = await agentProcess(world, 'resume', String(first.parkedRun));
  assert.equal(second.status, 'parked', JSON.stringify(second));
  assert.deepEqual(tickets.ids(), ['t1', 't2']);
  const t1 = (second.requestIds as string[])[0]!;
  assert.deepEqual((await client.get(t1)).call.args, { id: 't1' });
  assert.deepEqual(tickets.ids(), ['t1', 't2'], 't1 is present while parked');

  const rejected = await server.operatorCli('reject', t1, '--message', REJECTION, '--reviewer', 'alice');
  assert.equal(rejected.status, 0, rejected.stderr);
  const done = await agentProcess(world, 'resume', String(second.parkedRun));
  assert.equal(done.status, 'finished', JSON.stringify(done));
  assert.equal(done.final, FINAL_TEXT);
  assert.deepEqual(tickets.ids(), ['t1', 't2']);
  assert.equal(tickets.deleteRuns(), 1);
  assert.deepEqual(
    told(api.requests()).map((t) => [t.input, t.isError, t.text]),
    [
      [{ id: 't3' }, false, 'deleted ticket t3'],
      [{ id: 't1' }, true, REJECTION],
    ],
  );

  // A parked run is resumed once, whoever asks.
  const again = await agentProcess(world, 'resume', String(first.parkedRun));
  assert.equal(again.error, 'ConflictError', JSON.stringify(again));
  assert.equal(tickets.deleteRuns(), 1);
});
