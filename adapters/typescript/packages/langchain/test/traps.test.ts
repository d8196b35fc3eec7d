/**
 * Batched mode's traps, first on the bare SDK (LangChain.js 1.5.14's humanInTheLoopMiddleware), then
 * closed through crossgate: answers matched by position, an invalid answer saved before it is checked,
 * resume twice, two concurrent resumes.
 */

import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { ConflictError, type Parked } from '@crossgate/client';
import { startServer, TicketStore, type LiveServer } from '@crossgate/testing';
import { AIMessage, type BaseMessage } from '@langchain/core/messages';
import type { ChatResult } from '@langchain/core/outputs';
import { Command, MemorySaver } from '@langchain/langgraph';
import { createAgent, humanInTheLoopMiddleware } from 'langchain';

import { callRequestId, Gate } from '@crossgate/langchain';

import { deleteTool, REJECTION, ScriptedModel, seedAgent, seedCalls, toolResults } from './support.js';

const approve = { type: 'approve' } as const;
const rejectT1 = { type: 'reject', message: REJECTION } as const;
const decisions = (...d: object[]) => new Command({ resume: { decisions: d } });
const cfg = (thread: string) => ({ configurable: { thread_id: thread } });

function freshTickets(): TicketStore {
  const tickets = new TicketStore(join(mkdtempSync(join(tmpdir(), 'lc-traps-')), 'tickets.json'));
  tickets.seed();
  return tickets;
}

/** The bare SDK: both deletes interrupt, approve or reject only, an in-memory checkpointer. */
async function bareAgent() {
  const tickets = freshTickets();
  const model = new ScriptedModel(seedCalls);
  const agent = createAgent({
    model,
    tools: [deleteTool(tickets)],
    checkpointer: new MemorySaver(),
    middleware: [humanInTheLoopMiddleware({ interruptOn: { delete_ticket: { allowedDecisions: ['approve', 'reject'] } } })],
  });
  const paused = (await agent.invoke({ messages: [{ role: 'user', content: 'Delete t3 and t1.' }] }, cfg('bare'))) as { __interrupt__?: unknown[] };
  assert.equal(paused.__interrupt__?.length, 1);
  return { tickets, model, agent };
}

describe('the bare SDK', () => {
  test('answers are matched by position: a reordered list gives t3 the rejection meant for t1, and drops the approved call', async () => {
    const { tickets, model, agent } = await bareAgent();
    await agent.invoke(decisions(rejectT1, approve), cfg('bare'));
    assert.deepEqual(toolResults(model.prompts.at(-1) ?? []), { call_t3: { content: REJECTION, status: 'error' } });
    assert.equal(tickets.deleteRuns(), 0);
  });

  test('a short list is saved, then refused: the thread is poisoned and a correct answer fails the same way', async () => {
    const { agent } = await bareAgent();
    await assert.rejects(agent.invoke(decisions(approve), cfg('bare')), /Number of human decisions \(1\)/);
    await assert.rejects(agent.invoke(decisions(approve, rejectT1), cfg('bare')), /Number of human decisions \(1\)/);
  });

  test('an answer the tool does not allow is saved before it is checked: the thread is poisoned', async () => {
    const { tickets, agent } = await bareAgent();
    const edit = { type: 'edit', editedAction: { name: 'delete_ticket', args: { id: 't2' } } };
    await assert.rejects(agent.invoke(decisions(edit, approve), cfg('bare')), /Unexpected human decision/);
    await assert.rejects(agent.invoke(decisions(approve, rejectT1), cfg('bare')), /Unexpected human decision/);
    assert.equal(tickets.deleteRuns(), 0);
  });

  test('a second resume is accepted silently; two concurrent resumes run every tool twice', async () => {
    const once = await bareAgent();
    await once.agent.invoke(decisions(approve, approve), cfg('bare'));
    await once.agent.invoke(decisions(approve, approve), cfg('bare'));
    assert.equal(once.tickets.deleteRuns(), 2, 'no error tells the caller it resumed a finished thread');
    const racing = await bareAgent();
    await Promise.all([racing.agent.invoke(decisions(approve, approve), cfg('bare')), racing.agent.invoke(decisions(approve, approve), cfg('bare'))]);
    assert.equal(racing.tickets.deleteRuns('t3'), 2);
    assert.equal(racing.tickets.deleteRuns('t1'), 2);
  });
});

/** Deletes t3 as `call_x`, then, once it read that result, asks again under the same call id for t1. */
class ReusedIdModel extends ScriptedModel {
  constructor() {
    super([{ id: 'call_x', name: 'delete_ticket', args: { id: 't3' } }]);
  }

  override async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    const turns = messages.filter((m) => AIMessage.isInstance(m) && (m as AIMessage).tool_calls?.length).length;
    if (turns !== 1 || Object.keys(toolResults(messages)).length !== 1) return super._generate(messages);
    this.prompts.push(messages);
    const message = new AIMessage({ content: '', tool_calls: [{ id: 'call_x', name: 'delete_ticket', args: { id: 't1' }, type: 'tool_call' }] });
    return { generations: [{ text: '', message }] };
  }
}

describe('through crossgate', () => {
  let server: LiveServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server.stop());

  async function parkedSeed(thread: string) {
    const tickets = freshTickets();
    const client = server.client();
    const { model, agent } = seedAgent(client, tickets, join(server.dir, `${thread}.db`));
    const gate = new Gate({ client, graph: agent, agent: 'tickets', authority: server.pin ?? undefined });
    const outcome = (await gate.run({ messages: [{ role: 'user', content: 'Delete t3 and t1.' }] }, { thread })) as Parked;
    assert.equal(outcome.status, 'parked');
    return { tickets, model, agent, gate, outcome, t3: callRequestId(thread, 'call_t3'), t1: callRequestId(thread, 'call_t1') };
  }

  test('decisions are read by request id: a resume value in any order, or too short, changes nothing', async () => {
    const { tickets, model, agent, gate, outcome, t3, t1 } = await parkedSeed('position');
    // A client resuming LangGraph itself, while nothing is decided: nothing runs, the thread is not poisoned.
    await agent.invoke(decisions(approve), cfg('position'));
    assert.equal(tickets.deleteRuns(), 0);
    await server.decide(t3, { kind: 'approve' });
    await server.decide(t1, { kind: 'reject', message: REJECTION });
    const done = await gate.resume(outcome.parkedRun);
    assert.equal(done.status, 'finished');
    const read = toolResults(model.prompts.at(-1) ?? []);
    assert.deepEqual(read.call_t3, { content: 'deleted ticket t3', status: 'success' });
    assert.deepEqual(read.call_t1, { content: REJECTION, status: 'error' });
    assert.deepEqual(tickets.ids(), ['t1', 't2']);
  });

  test('a reordered list sent straight to LangGraph gets the reviewers’ decisions, not its own', async () => {
    const { tickets, model, agent, t3, t1 } = await parkedSeed('reordered');
    await server.decide(t3, { kind: 'approve' });
    await server.decide(t1, { kind: 'reject', message: REJECTION });
    await agent.invoke(decisions(rejectT1, approve), cfg('reordered'));
    assert.deepEqual(toolResults(model.prompts.at(-1) ?? []).call_t1, { content: REJECTION, status: 'error' });
    assert.equal(tickets.deleteRuns('t3'), 1);
    assert.equal(tickets.deleteRuns('t1'), 0);
  });

  test('an answer the tool does not allow is refused before anything is saved; the request stays pending', async () => {
    const { tickets, gate, outcome, t3, t1 } = await parkedSeed('invalid');
    await assert.rejects(server.decide(t3, { kind: 'edit', args: { id: 7 } }), /422/);
    assert.equal((await server.client().get(t3)).status, 'pending');
    assert.equal((await gate.resume(outcome.parkedRun)).status, 'parked', 'still waiting: nothing saved, nothing poisoned');
    await server.decide(t3, { kind: 'edit', args: { id: 't2' } });
    await server.decide(t1, { kind: 'reject', message: REJECTION });
    assert.equal((await gate.resume(outcome.parkedRun)).status, 'finished');
    assert.deepEqual(tickets.ids(), ['t1', 't3'], 'the edit ran: t2 deleted instead of t3');
  });

  test('resume twice: the second is refused and runs nothing; two concurrent resumes run the call once', async () => {
    const once = await parkedSeed('twice');
    await server.decide(once.t3, { kind: 'approve' });
    await server.decide(once.t1, { kind: 'approve' });
    assert.equal((await once.gate.resume(once.outcome.parkedRun)).status, 'finished');
    await assert.rejects(once.gate.resume(once.outcome.parkedRun), ConflictError);
    await once.agent.invoke(decisions(approve, approve), cfg('twice'));
    assert.equal(once.tickets.deleteRuns('t3'), 1);
    assert.equal(once.tickets.deleteRuns('t1'), 1);

    const racing = await parkedSeed('racing');
    await server.decide(racing.t3, { kind: 'approve' });
    await server.decide(racing.t1, { kind: 'approve' });
    const results = await Promise.allSettled([racing.gate.resume(racing.outcome.parkedRun), racing.gate.resume(racing.outcome.parkedRun)]);
    assert.deepEqual(results.map((r) => r.status).sort(), ['fulfilled', 'rejected']);
    assert.equal(racing.tickets.deleteRuns('t3'), 1);
    assert.equal(racing.tickets.deleteRuns('t1'), 1);
  });

  test('two concurrent resumes straight to LangGraph (no gate): the guard runs each call once', async () => {
    const { tickets, agent, t3, t1 } = await parkedSeed('direct');
    await server.decide(t3, { kind: 'approve' });
    await server.decide(t1, { kind: 'approve' });
    await Promise.allSettled([agent.invoke(decisions(approve, approve), cfg('direct')), agent.invoke(decisions(approve, approve), cfg('direct'))]);
    assert.equal(tickets.deleteRuns('t3'), 1);
    assert.equal(tickets.deleteRuns('t1'), 1);
  });

  test('a tool call id the model uses again for other arguments is refused: the request was reviewed for the first ones', async () => {
    const tickets = freshTickets();
    const client = server.client();
    const model = new ReusedIdModel();
    const { agent } = seedAgent(client, tickets, join(server.dir, 'reused.db'), model);
    const gate = new Gate({ client, graph: agent, agent: 'tickets', authority: server.pin ?? undefined });
    const outcome = (await gate.run({ messages: [{ role: 'user', content: 'Delete t3.' }] }, { thread: 'reused' })) as Parked;
    await server.decide(callRequestId('reused', 'call_x'), { kind: 'approve' });
    const done = await gate.resume(outcome.parkedRun);
    assert.equal(done.status, 'finished');
    assert.deepEqual(tickets.ids(), ['t1', 't2'], 't3 deleted once; t1 never');
    assert.match(JSON.stringify(model.prompts.at(-1)?.map((m) => m.content)), /crossgate did not run delete_ticket/);
  });
});
