/**
 * The gate pinned to the authority's key, against a server that signs, through the real bundled CLI in
 * one session held inline (each CLI start costs seconds): what the server signed runs, nothing forged does.
 */

import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import type { AgentClient, ApprovalRequest } from '@crossgate/client';
import { Gate } from '@crossgate/claude-agent-sdk';
import {
  auditEvents,
  forge,
  insertRule,
  REFUSAL,
  REFUSAL_REASON,
  refusals,
  startServer,
  TicketStore,
  type Forgery,
  type LiveServer,
} from '@crossgate/testing';

import { calls, cliEnv, startMessagesApi, told, type MessagesApi } from './support/messages-api.js';
import { ticketTools } from './support/tickets.js';

let server: LiveServer;
let api: MessagesApi;
let client: AgentClient;
before(async () => {
  server = await startServer();
  api = await startMessagesApi(server.dir);
  client = server.client();
});
after(async () => {
  await api.stop();
  await server.stop();
});

const FORGED: Record<string, Forgery> = { t1: 'unsigned', t2: 'retarget', t3: 'other_key' };

/** Answers each pending request as it turns up: t4 approved (and remembered) by the reviewer, the others forged. */
function attacker() {
  let running = true;
  const ids: Record<string, string> = {};
  const done = (async () => {
    const seen = new Set<string>();
    while (running) {
      for (const request of (await client.listRequests({ status: 'pending' })).items as ApprovalRequest[]) {
        if (seen.has(request.id)) continue;
        seen.add(request.id);
        const ticket = String(request.call.args.id);
        ids[ticket] = request.id;
        const how = FORGED[ticket];
        if (how === undefined) await server.decide(request.id, { kind: 'approve', remember: { scope: 'forever', match: 'exact' } });
        else await forge(server, { requestId: request.id, how, source: ids.t4! });
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  return { ids, stop: async () => ((running = false), await done) };
}

test('pinned: the signed approval and the signed rule run; unsigned, re-targeted and other-key approvals and inserted rules run nothing', async () => {
  const tickets = new TicketStore(join(server.dir, 'tickets.json'));
  tickets.seed(['t1', 't2', 't3', 't4', 't6', 't7']);
  await insertRule(server, { id: 'rule_unsigned', effect: 'allow', tool: 'delete_ticket', match: 'pattern', arg_patterns: { id: 't6' } });
  await insertRule(server, { id: 'rule_own_key', effect: 'allow', tool: 'delete_ticket', match: 'pattern', arg_patterns: { id: 't7' } }, 'other_key');
  const probe = await client.evaluate({ framework: 'claude-agent-sdk-ts', tool: 'delete_ticket', args: { id: 't6' } });
  assert.equal(probe.kind, 'allow', 'the server alone would let the inserted rule through');
  const work = join(server.dir, 'work');
  mkdirSync(work, { recursive: true });
  const gate = new Gate({
    client,
    options: { env: cliEnv(api.baseUrl, join(server.dir, 'cli')), cwd: work, settingSources: [], tools: [] },
    servers: { tickets: ticketTools(tickets) },
    hold: 30,
    authority: server.pin!,
  });
  const script = calls(
    ['delete_ticket', { id: 't4' }],
    ['delete_ticket', { id: 't1' }],
    ['delete_ticket', { id: 't2' }],
    ['delete_ticket', { id: 't3' }],
    ['delete_ticket', { id: 't4' }],
    ['delete_ticket', { id: 't6' }],
    ['delete_ticket', { id: 't7' }],
  );
  const review = attacker();
  const outcome = await gate.run(script);
  await review.stop();
  assert.equal(outcome.status, 'finished');

  const answers = told(api.requests(), script);
  assert.deepEqual(answers.map((t) => t.input.id), ['t4', 't1', 't2', 't3', 't4', 't6', 't7']);
  assert.equal(answers[0]!.text.trim(), 'deleted ticket t4');
  assert.equal(answers[4]!.text.trim(), 'ticket t4 does not exist', 'the remembered (signed) rule let t4 run again, unasked');
  for (const answer of [...answers.slice(1, 4), ...answers.slice(5)]) {
    assert.match(answer.text, new RegExp(REFUSAL), `the model reads why ${String(answer.input.id)} did not run`);
  }
  assert.deepEqual(tickets.ids(), ['t1', 't2', 't3', 't6', 't7']);
  assert.equal(tickets.deleteRuns(), 2, 'only t4 ran: once approved, once by its signed rule');

  const logged = await refusals(server);
  for (const [ticket, how] of Object.entries(FORGED)) {
    const closed = await client.get(review.ids[ticket]!);
    assert.equal(closed.status, 'cancelled', `${ticket} is closed, so no later resume runs it`);
    assert.match(closed.closed_reason ?? '', new RegExp(REFUSAL));
    assert.equal(logged[review.ids[ticket]!], REFUSAL_REASON[how], `the log names why ${ticket} was refused`);
  }
  const refused = (await auditEvents(server)).filter((e) => e.kind === 'refused');
  assert.deepEqual(
    Object.fromEntries(refused.map((e) => [e.payload.rule, e.payload.refused])),
    { rule_unsigned: 'unsigned', rule_own_key: 'unknown_key' },
  );
});
