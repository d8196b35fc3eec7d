/** The six decisions through the real bundled CLI, in one session held inline (each CLI start costs seconds). */

import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import type { AgentClient, ApprovalRequest } from '@crossgate/client';
import { CAPABILITY_TABLE, Gate } from '@crossgate/claude-agent-sdk';
import { SEED_POLICY, startServer, TicketStore, type DecisionBody, type LiveServer } from '@crossgate/testing';

import { calls, cliEnv, startMessagesApi, told, type MessagesApi } from './support/messages-api.js';
import { ticketTools } from './support/tickets.js';

const POLICY = `${SEED_POLICY}  - name: review-shell
    verdict: ask
    tool: Bash
    reason: Shell commands need review.
`;

let server: LiveServer;
let api: MessagesApi;
let client: AgentClient;
before(async () => {
  server = await startServer({ policy: POLICY });
  api = await startMessagesApi(server.dir);
  client = server.client();
});
after(async () => {
  await api.stop();
  await server.stop();
});

/** A reviewer that decides every pending request as it turns up, until stopped; what it refused to send, too. */
function reviewer(decide: (request: ApprovalRequest) => DecisionBody[]) {
  let running = true;
  const refusals: string[] = [];
  const done = (async () => {
    const seen = new Set<string>();
    while (running) {
      for (const request of (await client.listRequests({ status: 'pending' })).items) {
        if (seen.has(request.id)) continue;
        seen.add(request.id);
        for (const decision of decide(request)) {
          try {
            await server.decide(request.id, decision);
            break;
          } catch (error) {
            refusals.push(`${decision.kind} ${request.call.tool}: ${String(error).slice(0, 120)}`);
          }
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  return { refusals, stop: async () => ((running = false), await done) };
}

test('the capability table: six decisions, respond only where crossgate runs the tool', () => {
  assert.deepEqual(CAPABILITY_TABLE.map((c) => c.decision), ['approve', 'edit', 'reject', 'respond', 'remember', 'defer']);
  assert.equal(CAPABILITY_TABLE.find((c) => c.decision === 'respond')?.otherTools, 'refused');
});

test('approve, edit, reject, respond, remember and a policy deny reach the model through the real CLI; respond is refused up front for Bash', async () => {
  const tickets = new TicketStore(join(server.dir, 'tickets.json'));
  tickets.seed(['t1', 't2', 't3', 't4', 't5', 't6', 't7']);
  const sql: string[] = [];
  const work = join(server.dir, 'work');
  mkdirSync(work, { recursive: true });
  const gate = new Gate({
    client,
    options: { env: cliEnv(api.baseUrl, join(server.dir, 'cli')), cwd: work, settingSources: [], tools: ['Bash'] },
    servers: { tickets: ticketTools(tickets, sql) },
    hold: 30,
  });
  const script = calls(
    ['delete_ticket', { id: 't3' }],
    ['delete_ticket', { id: 't1' }],
    ['delete_ticket', { id: 't4' }],
    ['delete_ticket', { id: 't5' }],
    ['Bash', { command: 'echo proposed' }],
    ['delete_ticket', { id: 't6' }],
    ['delete_ticket', { id: 't7' }],
    ['execute_sql', { query: 'DROP TABLE tickets' }],
  );
  const allowed: Record<string, string[]> = {};
  const review = reviewer((request) => {
    const id = String(request.call.args.id ?? request.call.args.command);
    allowed[id] = [...request.allowed_decisions].sort();
    if (id === 't3') return [{ kind: 'approve' }];
    if (id === 't1') return [{ kind: 'edit', args: { id: 't2' } }];
    if (id === 't4') return [{ kind: 'reject', message: 'Keep t4: it is under audit. Do not retry.' }];
    if (id === 't5') return [{ kind: 'respond', content: 't5 was archived by hand; nothing to delete.' }];
    if (id === 'echo proposed') return [{ kind: 'respond', content: 'pretend' }, { kind: 'edit', args: { command: 'echo edited' } }];
    if (id === 't6') return [{ kind: 'approve', remember: { scope: 'run', match: 'tool' } }];
    return [{ kind: 'reject', message: `nobody expected ${id}` }];
  });
  const outcome = await gate.run(script);
  await review.stop();
  assert.equal(outcome.status, 'finished');
  assert.deepEqual(
    told(api.requests(), script).map((t) => [t.isError, t.text.trim()]),
    [
      [false, 'deleted ticket t3'],
      [false, 'deleted ticket t2'],
      [true, 'Keep t4: it is under audit. Do not retry.'],
      [false, 't5 was archived by hand; nothing to delete.'],
      [false, 'edited'],
      [false, 'deleted ticket t6'],
      [false, 'deleted ticket t7'],
      [true, 'PreToolUse:mcp__tickets__execute_sql hook error: Dropping tables is not allowed. Do not retry.'],
    ],
  );
  assert.deepEqual(tickets.ids(), ['t1', 't4', 't5']);
  assert.equal(tickets.deleteRuns(), 4, 't3, the edited t2, t6 and the remembered t7 ran, once each');
  assert.deepEqual(sql, []);
  assert.deepEqual(allowed['t3'], ['approve', 'edit', 'reject', 'respond']);
  assert.deepEqual(allowed['echo proposed'], ['approve', 'edit', 'reject'], 'respond is not offered for a tool the CLI runs itself');
  assert.equal(review.refusals.length, 1);
  assert.match(review.refusals[0]!, /^respond Bash: .*(422|403|409)/);
  assert.equal(allowed['t7'], undefined, 'the remembered rule answered t7: nobody was asked');
  const requests = (await client.listRequests({ limit: 100 })).items;
  assert.ok(requests.every((r) => r.call.framework === 'claude-agent-sdk-ts'));
  const statuses = Object.fromEntries(requests.map((r) => [String(r.call.args.id ?? r.call.args.command), r.status]));
  assert.deepEqual(
    statuses,
    { t3: 'applied', t1: 'applied', t4: 'rejected', t5: 'answered', 'echo proposed': 'applied', t6: 'applied' },
    'each decision reached the agent',
  );
});
