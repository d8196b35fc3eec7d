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
    // The agent process gets the server's address and an agent token, and nothing of the store.
    const env = { PATH: process.env.PATH ?? '', ...server.agentEnv };
    const child = spawn(process.execPath, [AGENT, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('close', (status) => (status === 0 ? resolve(JSON.parse(out) as Record<string, unknown>) : reject(new Error(`agent exited ${status}: ${err}`))));
  });
}

test('seed: park in one process, decide with the Python CLI through the server with a reviewer token, resume in a third; t3 deleted, t1 kept, the model reads the rejection verbatim', async () => {
  const tickets = new TicketStore(join(server.dir, 'tickets.json'));
  tickets.seed();
  const parkedOut = (await agentProcess(['park', tickets.path])) as {
    outcome: { status: string; parkedRun: string; requestIds: string[] };
    ids: { t3: string; t1: string };
    tickets: string[];
  };
  assert.equal(parkedOut.outcome.status, 'parked');
  assert.deepEqual([...parkedOut.outcome.requestIds].sort(), [parkedOut.ids.t3, parkedOut.ids.t1].sort());
  assert.deepEqual(parkedOut.tickets, ['t1', 't2', 't3'], 'both tickets are there while parked');
  assert.equal(tickets.deleteRuns(), 0);

  const shown = await server.cli('show', parkedOut.ids.t3, '--json');
  assert.equal(shown.status, 0, shown.stderr);
  const request = JSON.parse(shown.stdout) as { framework: string; args: { id: string }; status: string };
  assert.equal(request.framework, 'ai-sdk');
  assert.deepEqual(request.args, { id: 't3' });
  assert.equal(request.status, 'pending');
  // Without credentials the CLI decides nothing: one line saying how, and the request stays pending.
  const refused = await server.cli('approve', parkedOut.ids.t3, '--reviewer', 'alice');
  assert.equal(refused.status, 6); // denied: no credential
  const errors = refused.stderr.split('\n').filter((line) => line.startsWith('crossgate: error:'));
  assert.equal(errors.length, 1, refused.stderr);
  assert.match(errors[0]!, /needs a reviewer's credentials/);
  assert.equal((await server.client().get(parkedOut.ids.t3)).status, 'pending');

  const approved = await server.reviewerCli('approve', parkedOut.ids.t3);
  assert.equal(approved.status, 0, approved.stderr);
  const rejected = await server.reviewerCli('reject', parkedOut.ids.t1, '--message', REJECTION);
  assert.equal(rejected.status, 0, rejected.stderr);
  const decided = await server.client().get(parkedOut.ids.t3);
  assert.equal(decided.decision?.reviewer, 'alice', 'the server records the reviewer its token names');
  assert.equal(decided.signatures.length, 1, 'and signs the decision');

  const resumed = (await agentProcess(['resume', tickets.path, parkedOut.outcome.parkedRun])) as {
    status: string;
    read: Record<string, unknown>;
    tickets: string[];
  };
  assert.equal(resumed.status, 'finished');
  assert.deepEqual(resumed.read.call_t3, { type: 'text', value: 'deleted ticket t3' });
  assert.deepEqual(resumed.read.call_t1, { type: 'execution-denied', reason: REJECTION });
  assert.deepEqual(resumed.tickets, ['t1', 't2']);
  assert.equal(tickets.deleteRuns('t3'), 1);
  assert.equal(tickets.deleteRuns('t1'), 0);

  await assert.rejects(agentProcess(['resume', tickets.path, parkedOut.outcome.parkedRun]), /already_resumed|resumed/);
  assert.equal(tickets.deleteRuns(), 1, 'a second resume runs nothing');
});
