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

test('seed: park in one process, decide with the Python CLI holding the authority key, resume in a third; t3 deleted, t1 kept, the model reads the decline reason verbatim', async () => {
  const tickets = new TicketStore(join(server.dir, 'tickets.json'));
  const db = join(server.dir, 'mastra.db');
  tickets.seed();
  const parkedOut = (await agentProcess(['park', tickets.path, db])) as {
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
  assert.equal(request.framework, 'mastra');
  assert.deepEqual(request.args, { id: 't3' });
  assert.equal(request.status, 'pending');
  const approved = await server.operatorCli('approve', parkedOut.ids.t3, '--reviewer', 'alice');
  assert.equal(approved.status, 0, approved.stderr);
  const rejected = await server.operatorCli('reject', parkedOut.ids.t1, '--message', REJECTION, '--reviewer', 'alice');
  assert.equal(rejected.status, 0, rejected.stderr);
  assert.equal((await server.client().get(parkedOut.ids.t3)).signatures.length, 1, 'the key holder signs its decision');

  const resumed = (await agentProcess(['resume', tickets.path, db, parkedOut.outcome.parkedRun])) as {
    status: string;
    read: Record<string, unknown>;
    tickets: string[];
  };
  assert.equal(resumed.status, 'finished');
  assert.deepEqual(resumed.read.call_t3, { type: 'text', value: 'deleted ticket t3' });
  assert.deepEqual(resumed.read.call_t1, { type: 'text', value: REJECTION }, 'Mastra hands the reason to the model as a plain text result');
  assert.deepEqual(resumed.tickets, ['t1', 't2']);
  assert.equal(tickets.deleteRuns('t3'), 1);
  assert.equal(tickets.deleteRuns('t1'), 0);

  await assert.rejects(agentProcess(['resume', tickets.path, db, parkedOut.outcome.parkedRun]), /already_resumed|resumed/);
  assert.equal(tickets.deleteRuns(), 1, 'a second resume runs nothing');
});
