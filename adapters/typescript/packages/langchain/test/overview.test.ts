import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { startServer, type LiveServer } from '@crossgate/testing';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { createAgent } from 'langchain';

import { callRequestId, crossgateMiddleware, Gate, interruptOnPolicy } from '@crossgate/langchain';

import { OVERVIEW_INTERRUPT_ON, overviewCalls, overviewTools, ScriptedModel, toolResults } from './support.js';

let server: LiveServer;
before(async () => {
  server = await startServer({ policy: JSON.stringify(interruptOnPolicy(OVERVIEW_INTERRUPT_ON)) });
});
after(() => server.stop());

function overviewAgent(ran: string[], file: string) {
  const tools = overviewTools(ran);
  const model = new ScriptedModel(overviewCalls);
  const client = server.client();
  const agent = createAgent({
    model,
    tools,
    middleware: [crossgateMiddleware({ client, tools, interruptOn: OVERVIEW_INTERRUPT_ON, authority: server.pin ?? undefined })],
    checkpointer: SqliteSaver.fromConnString(file),
  });
  return { model, gate: new Gate({ client, graph: agent, agent: 'overview', authority: server.pin ?? undefined }) };
}

test('overview, batched: one pause for write_file and execute_sql, read_data not gated; each request carries its decisions and the input schema', async () => {
  const ran: string[] = [];
  const { model, gate } = overviewAgent(ran, join(server.dir, 'overview.db'));
  const outcome = await gate.run({ messages: [{ role: 'user', content: 'write the report' }] }, { thread: 'overview-1' });
  assert.equal(outcome.status, 'parked');
  const write = callRequestId('overview-1', 'call_write');
  const sql = callRequestId('overview-1', 'call_sql');
  assert.deepEqual([...(outcome.status === 'parked' ? outcome.requestIds : [])].sort(), [write, sql].sort());
  assert.deepEqual(ran, [], 'batched: nothing runs while the turn waits, not even read_data');

  const client = server.client();
  const w = await client.get(write);
  assert.deepEqual(w.allowed_decisions, ['approve', 'edit', 'reject', 'respond']);
  assert.deepEqual(w.args_schema, {
    type: 'object',
    properties: { path: { type: 'string' }, content: { type: 'string' } },
    required: ['path', 'content'],
    additionalProperties: false,
  });
  const s = await client.get(sql);
  assert.deepEqual(s.allowed_decisions, ['approve', 'reject']);
  assert.equal(s.description, 'SQL statements need DBA approval');

  // execute_sql allows approve and reject only: an edit is refused and the request stays pending.
  await assert.rejects(server.decide(sql, { kind: 'edit', args: { query: 'DROP TABLE users' } }), /4\d\d/);
  // An edit the tool's schema refuses is refused before it is saved.
  await assert.rejects(server.decide(write, { kind: 'edit', args: { path: 7 } }), /422/);
  assert.equal((await client.get(write)).status, 'pending');
  assert.equal((await client.get(sql)).status, 'pending');

  await server.decide(write, { kind: 'edit', args: { path: 'report-final.txt', content: 'hello' } });
  await server.decide(sql, { kind: 'reject', message: 'Not during business hours.' });
  const done = await gate.resume(outcome.status === 'parked' ? outcome.parkedRun : '');
  assert.equal(done.status, 'finished');
  assert.deepEqual(ran.sort(), ['read_data:SELECT 1', 'write_file:report-final.txt']);
  const read = toolResults(model.prompts.at(-1) ?? []);
  assert.equal(read.call_sql?.content, 'Not during business hours.');
  assert.equal(read.call_sql?.status, 'error');
  assert.match(read.call_write?.content ?? '', /replaced this tool call.*write_file with arguments \{"path":"report-final.txt","content":"hello"\}.*wrote 5 bytes to report-final.txt/s);
  assert.equal(read.call_read?.content, 'rows: 3');
});
