import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { startServer, TicketStore, type LiveServer } from '@crossgate/testing';

import { REJECTION } from './support.js';

let server: LiveServer;
before(async () => {
  server = await startServer();
});
after(() => server.stop());

const AGENT = fileURLToPath(new URL('./agent.js', import.meta.url));

function agentProcess(args: string[]): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    // The agent process gets the server's address, an agent token and the key to pin; nothing of the store.
    const env = { PATH: process.env.PATH ?? '', ...server.agentEnv };
    const child = spawn(process.execPath, [AGENT, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('close', (status) => (status === 0 ? resolve(JSON.parse(out) as Record<string, unknown>) : reject(new Error(`agent exited ${status}: ${err}`))));
  });
}

test('seed: park in one process (SQLite checkpointer, gatedToolNode), decide with a reviewer token over the API, resume in a third; t3 deleted once, t1 kept, the model reads the rejection verbatim', async () => {
  const tickets = new TicketStore(join(server.dir, 'tickets.json'));
  tickets.seed();
  const checkpoints = join(server.dir, 'checkpoints.db');
  const parkedOut = (await agentProcess(['park', tickets.path, checkpoints])) as {
    outcome: { status: string; parkedRun: string; requestIds: string[] };
    ids: { t3: string; t1: string };
    tickets: string[];
  };
  assert.equal(parkedOut.outcome.status, 'parked');
  assert.deepEqual([...parkedOut.outcome.requestIds].sort(), [parkedOut.ids.t3, parkedOut.ids.t1].sort());
  assert.deepEqual(parkedOut.tickets, ['t1', 't2', 't3']);
  assert.equal(tickets.deleteRuns(), 0);

  const request = await server.client().get(parkedOut.ids.t3);
  assert.equal(request.call.framework, 'langgraph-ts');
  assert.deepEqual(request.call.args, { id: 't3' });
  const parkedRun = await server.client().getParked(parkedOut.outcome.parkedRun);
  assert.equal(parkedRun.framework, 'langgraph-ts');

  const approved = await server.reviewerCli('approve', parkedOut.ids.t3);
  assert.equal(approved.status, 0, approved.stderr);
  const rejected = await server.reviewerCli('reject', parkedOut.ids.t1, '--message', REJECTION);
  assert.equal(rejected.status, 0, rejected.stderr);
  const decided = await server.client().get(parkedOut.ids.t3);
  assert.equal(decided.decision?.reviewer, 'alice');
  assert.equal(decided.signatures.length, 1, 'the server signs the decision');

  const resumed = (await agentProcess(['resume', tickets.path, checkpoints, parkedOut.outcome.parkedRun])) as {
    status: string;
    read: Record<string, { content: string; status: string }>;
    tickets: string[];
  };
  assert.equal(resumed.status, 'finished');
  assert.deepEqual(resumed.read.call_t3, { content: 'deleted ticket t3', status: 'success' });
  assert.deepEqual(resumed.read.call_t1, { content: REJECTION, status: 'error' });
  assert.deepEqual(resumed.tickets, ['t1', 't2']);
  assert.equal(tickets.deleteRuns('t3'), 1);
  assert.equal(tickets.deleteRuns('t1'), 0);

  await assert.rejects(agentProcess(['resume', tickets.path, checkpoints, parkedOut.outcome.parkedRun]), /resumed/);
  assert.equal(tickets.deleteRuns(), 1, 'a second resume runs nothing');
});
