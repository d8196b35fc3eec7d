/**
 * The two OpenAI Agents JS traps of issue 16, each first reproduced against the bare SDK, then shown
 * closed through the gate: an edited state string ran the edited call, and resuming one state string
 * twice ran the tool twice.
 */

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { type AgentClient } from '@crossgate/client';
import { Gate } from '@crossgate/openai-agents';
import { startServer, TicketStore, type LiveServer } from '@crossgate/testing';
import { run, RunState } from '@openai/agents';

import { del, triage } from './support/triage.js';

let server: LiveServer;
let client: AgentClient;
before(async () => {
  server = await startServer();
  client = server.client();
});
after(() => server.stop());

/** The state string with the call's arguments changed from t3 to t1 (its call id left as it was). */
function editArgs(state: string): string {
  return state.replace(/(?<!call_)t3/g, 't1');
}

function world(name: string): TicketStore {
  const tickets = new TicketStore(join(server.dir, `${name}.json`));
  tickets.seed(['t1', 't2', 't3']);
  return tickets;
}

/** The bare SDK with the SDK's own approval: `needsApproval: true` on the same tool. */
function bare(tickets: TicketStore) {
  const made = triage(tickets, [[del('t3')]]);
  for (const tool of made.agent.tools) (tool as { needsApproval: unknown }).needsApproval = async () => true;
  return made;
}

/** Re-park `state` as a new parked run of the same run and requests: what an agent credential could do. */
async function repark(state: string, original: { run: string; request_ids: string[]; metadata: Record<string, unknown> }) {
  const metadata = { ...original.metadata } as Record<string, never>;
  delete (metadata as Record<string, unknown>).crossgate_agent;
  return client.park({ framework: 'openai-agents-ts', run: original.run, request_ids: original.request_ids, state, metadata });
}

test('bare SDK: a state string edited from t3 to t1, then approved, deletes t1', async () => {
  const tickets = world('bare-edit');
  const parkedRun = await run(bare(tickets).agent, 'Delete t3.');
  assert.equal(parkedRun.interruptions.length, 1);
  const edited = editArgs(parkedRun.state.toString());
  const resumer = bare(tickets).agent;
  const state = await RunState.fromString(resumer, edited);
  for (const item of state.getInterruptions()) state.approve(item);
  await run(resumer, state);
  assert.deepEqual(tickets.ids(), ['t2', 't3'], 'the edited call ran: t1 is gone and t3 is still there');
});

test('bare SDK: one state string resumed twice runs the tool twice', async () => {
  const tickets = world('bare-twice');
  const text = (await run(bare(tickets).agent, 'Delete t3.')).state.toString();
  for (const _ of [1, 2]) {
    const resumer = bare(tickets).agent;
    const state = await RunState.fromString(resumer, text);
    for (const item of state.getInterruptions()) state.approve(item);
    await run(resumer, state);
  }
  assert.equal(tickets.deleteRuns('t3'), 2);
});

test('gate: an edited state string never runs the edited call, in the gate or outside it; the approved call runs once', async () => {
  const tickets = world('gate-edit');
  const parkedOutcome = await new Gate({ client, sdkAgent: triage(tickets, [[del('t3')]]).agent }).run('Delete t3.', { run: 'run-edit' });
  assert.equal(parkedOutcome.status, 'parked');
  await server.decide(parkedOutcome.requestIds[0]!, { kind: 'approve' });
  const stored = await client.getParked(parkedOutcome.parkedRun);
  const edited = editArgs(stored.state);
  assert.notEqual(edited, stored.state);
  assert.ok(edited.includes('call_t3'), 'the call id is kept: the arguments alone are edited');

  // Parked again as a run of its own and resumed through a gate: the request was reviewed for t3.
  const forged = await repark(edited, stored);
  const resumer = triage(tickets, [[del('t3')]]);
  const outcome = await new Gate({ client, sdkAgent: resumer.agent }).resume(forged.id);
  assert.equal(outcome.status, 'finished');
  assert.deepEqual(tickets.ids(), ['t1', 't2', 't3'], 'nothing was deleted');
  assert.match(resumer.model.told().call_t3 ?? '', /was reviewed for other arguments than the ones about to run/);

  // Run with the gated tools outside any Gate, its approval given in the SDK: no crossgate decision covers it.
  const outside = triage(tickets, [[del('t3')]]);
  new Gate({ client, sdkAgent: outside.agent });
  const state = await RunState.fromString(outside.agent, edited);
  for (const item of state.getInterruptions()) state.approve(item);
  await run(outside.agent, state);
  assert.deepEqual(tickets.ids(), ['t1', 't2', 't3']);
  assert.match(outside.model.told().call_t3 ?? '', /this run was not started through crossgate's Gate/);

  // With the call id edited too, the call is one nobody reviewed: it waits for a reviewer of its own.
  const renamed = await repark(stored.state.replaceAll('t3', 't1'), stored);
  const again = await new Gate({ client, sdkAgent: triage(tickets, [[del('t3')]]).agent }).resume(renamed.id);
  assert.equal(again.status, 'parked');
  assert.deepEqual(tickets.ids(), ['t1', 't2', 't3']);
  assert.equal(again.status === 'parked' && (await client.get(again.requestIds[0]!)).status, 'pending');

  // The honest parked run still applies the decision, once.
  const honest = triage(tickets, [[del('t3')]]);
  assert.equal((await new Gate({ client, sdkAgent: honest.agent }).resume(stored.id)).status, 'finished');
  assert.deepEqual(tickets.ids(), ['t1', 't2']);
  assert.equal(tickets.deleteRuns(), 1);
});

test('gate: one state string resumed twice runs the tool once; the second resume is refused or told it ran', async () => {
  const tickets = world('gate-twice');
  const first = await new Gate({ client, sdkAgent: triage(tickets, [[del('t3')]]).agent }).run('Delete t3.', { run: 'run-twice' });
  assert.equal(first.status, 'parked');
  await server.decide(first.requestIds[0]!, { kind: 'approve' });
  const stored = await client.getParked(first.parkedRun);
  assert.equal((await new Gate({ client, sdkAgent: triage(tickets, [[del('t3')]]).agent }).resume(first.parkedRun)).status, 'finished');
  assert.equal(tickets.deleteRuns('t3'), 1);

  // The same parked run again: the server's claim refuses it before anything runs.
  await assert.rejects(new Gate({ client, sdkAgent: triage(tickets, [[del('t3')]]).agent }).resume(first.parkedRun), { name: 'ConflictError' });

  // The same state string parked again and resumed: the server applied the request once already.
  const copy = await repark(stored.state, stored);
  const replay = triage(tickets, [[del('t3')]]);
  assert.equal((await new Gate({ client, sdkAgent: replay.agent }).resume(copy.id)).status, 'finished');
  assert.equal(tickets.deleteRuns('t3'), 1, 'the tool body did not run again');
  assert.match(replay.model.told().call_t3 ?? '', /delete_ticket already ran for this call .*it was not run again. Its result was: deleted ticket t3/);
});
