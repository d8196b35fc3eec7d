/**
 * The seed on PostgreSQL, where a user who runs several workers keeps the checkpoints: parked by one
 * process on `@langchain/langgraph-checkpoint-postgres`, decided over the API, then resumed by two
 * processes at once. One resumes (t3 deleted once, t1 kept, the rejection read verbatim), the other is
 * refused and runs nothing. Each run has a schema of its own in `$CROSSGATE_TEST_POSTGRES_URL`'s
 * database, dropped afterwards, so parallel runs never share checkpoints.
 */

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import pg from 'pg';

import { startServer, TicketStore, type LiveServer } from '@crossgate/testing';
import { agentProcess, REJECTION } from '@crossgate/testing/langchain';

const URL_ENV = process.env.CROSSGATE_TEST_POSTGRES_URL;
const skip = URL_ENV ? false : 'CROSSGATE_TEST_POSTGRES_URL is not set: the PostgreSQL checkpointer test did not run';
const AGENT = fileURLToPath(new URL('./agent.js', import.meta.url));
const SCHEMA = `crossgate_lgts_${process.pid}_${randomBytes(4).toString('hex')}`;

let server: LiveServer | undefined;
before(async () => {
  if (URL_ENV) server = await startServer();
});
after(async () => {
  await server?.stop();
  if (!URL_ENV) return;
  const client = new pg.Client({ connectionString: URL_ENV });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  } finally {
    await client.end();
  }
});

/** The URL the agent processes open their checkpointer with: the test database, this run's schema. */
function checkpointsUrl(): string {
  const url = new URL(URL_ENV ?? '');
  url.searchParams.set('schema', SCHEMA);
  return url.toString();
}

async function checkpointRows(thread: string): Promise<number> {
  const client = new pg.Client({ connectionString: URL_ENV });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${SCHEMA}.checkpoints WHERE thread_id = $1`, [thread]);
    return Number(rows[0]?.n ?? 0);
  } finally {
    await client.end();
  }
}

test('PostgreSQL checkpointer: parked in one process, two concurrent resumes in two others; the tool runs once', { skip, timeout: 300_000 }, async () => {
  const live = server!;
  // Set up once, as an app's deploy step would; the agents' own setup() then finds the tables.
  const saver = PostgresSaver.fromConnString(URL_ENV ?? '', { schema: SCHEMA });
  await saver.setup();
  await saver.end();

  const tickets = new TicketStore(join(live.dir, 'tickets.json'));
  tickets.seed();
  const checkpoints = checkpointsUrl();
  const parkedOut = (await agentProcess(live, AGENT, ['park', tickets.path, checkpoints])) as {
    outcome: { status: string; parkedRun: string; requestIds: string[] };
    ids: { t3: string; t1: string };
  };
  assert.equal(parkedOut.outcome.status, 'parked');
  assert.ok((await checkpointRows('seed-run')) > 0, 'the paused thread is checkpointed in PostgreSQL, in this run’s schema');
  assert.equal(tickets.deleteRuns(), 0, 'nothing ran while pending');

  assert.equal((await live.reviewerCli('approve', parkedOut.ids.t3)).status, 0);
  assert.equal((await live.reviewerCli('reject', parkedOut.ids.t1, '--message', REJECTION)).status, 0);

  const resume = () => agentProcess(live, AGENT, ['resume', tickets.path, checkpoints, parkedOut.outcome.parkedRun]);
  const results = await Promise.allSettled([resume(), resume()]);
  const resumed = results.filter((r) => r.status === 'fulfilled').map((r) => r.value as { status: string; read: Record<string, { content: string; status: string }> });
  const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => String(r.reason));
  assert.equal(resumed.length, 1, `exactly one resume goes ahead: ${refused.join('\n')}`);
  assert.equal(refused.length, 1);
  assert.match(refused[0]!, /ConflictError/, 'the other is refused by crossgate’s claim on the parked run');
  assert.equal(resumed[0]!.status, 'finished');
  assert.deepEqual(resumed[0]!.read.call_t3, { content: 'deleted ticket t3', status: 'success' });
  assert.deepEqual(resumed[0]!.read.call_t1, { content: REJECTION, status: 'error' });
  assert.deepEqual(tickets.ids(), ['t1', 't2']);
  assert.equal(tickets.deleteRuns('t3'), 1, 't3 deleted once across both resumes');
  assert.equal(tickets.deleteRuns('t1'), 0);

  await assert.rejects(resume(), /resumed/);
  assert.equal(tickets.deleteRuns(), 1, 'a later resume runs nothing');
});
