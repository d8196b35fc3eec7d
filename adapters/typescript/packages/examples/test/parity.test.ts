/**
 * One policy for every agent: the same table of calls, made by a Python adapter (Pydantic AI, over the
 * agent API) and by each of the four TypeScript adapters, gets the same verdicts from one signing server.
 * A verdict is read off what happened, not off what a gate says: the tool body ran (allow), a request
 * was made (ask, with its rule; the reviewer rejects it), or neither and the model read the rule's reason
 * (deny).
 */

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { callText, scriptedAgent, SDKS, type PlannedCall } from '@crossgate/examples';
import {
  AGENT_TOKEN,
  pythonOpsAsync,
  REVIEWER_TOKEN,
  startMessagesApi,
  startServer,
  type LiveServer,
  type MessagesApi,
} from '@crossgate/testing';

const POLICY = `version: 1
default: ask
rules:
  - name: reads
    verdict: allow
    tool: "read_*"
  - name: no-drop
    verdict: deny
    tool: execute_sql
    where:
      - arg: query
        regex: '(?i)\\bdrop\\s+table\\b'
    reason: Dropping tables is not allowed.
  - name: selects
    verdict: allow
    tool: execute_sql
    where:
      - arg: query
        regex: '(?i)\\A\\s*select\\b'
  - name: protected-tickets
    verdict: deny
    tool: delete_ticket
    where:
      - arg: id
        glob: "T-0*"
    reason: Tickets T-0* are kept for the audit.
  - name: review-deletes
    verdict: ask
    tool: delete_ticket
    reason: Deleting a ticket cannot be undone.
`;
const DENY_REASONS: Record<string, string> = {
  'no-drop': 'Dropping tables is not allowed.',
  'protected-tickets': 'Tickets T-0* are kept for the audit.',
};
const PLAN: PlannedCall[] = [
  { tool: 'read_ticket', args: { id: 't1' } },
  { tool: 'execute_sql', args: { query: 'DROP TABLE tickets' } },
  { tool: 'execute_sql', args: { query: 'select * from tickets' } },
  { tool: 'delete_ticket', args: { id: 'T-001' } },
  { tool: 'delete_ticket', args: { id: 't3' } },
  { tool: 'execute_sql', args: { query: 'update tickets set x = 1' } },
];
const EXPECTED = [
  'allow',
  'deny no-drop',
  'allow',
  'deny protected-tickets',
  'ask review-deletes',
  'ask (default)',
];
const REJECTION = 'A reviewer said no to this call. Do not retry it.';

let server: LiveServer;
let api: MessagesApi;
before(async () => {
  server = await startServer({ policy: POLICY });
  api = await startMessagesApi(server.dir);
});
after(async () => {
  await api.stop();
  await server.stop();
});

interface Seen {
  ran: string[];
  read: Record<number, string>;
  /** The rule of each request the adapter made, by the call it was made for. */
  asked: Map<string, string | null>;
}

/** Each planned call's verdict, from what happened to it. */
function verdicts(seen: Seen): string[] {
  return PLAN.map((call, index) => {
    const text = callText(call);
    const read = seen.read[index] ?? '';
    if (seen.ran.includes(text)) {
      assert.ok(read.includes(`ran ${text}`), `${text}: the model read the tool's result: ${read}`);
      return 'allow';
    }
    if (seen.asked.has(text)) {
      assert.ok(read.includes(REJECTION), `${text}: the model read the reviewer's rejection: ${read}`);
      return `ask ${seen.asked.get(text) ?? '(default)'}`;
    }
    const rule = Object.keys(DENY_REASONS).find((name) => read.includes(DENY_REASONS[name]!));
    return `deny ${rule ?? `(read: ${read})`}`;
  });
}

/** The requests the server holds for `framework`'s calls: which call each was for, and its rule. */
async function asked(framework: string): Promise<Map<string, string | null>> {
  const reply = await server.reviewerFetch(`/api/requests?framework=${encodeURIComponent(framework)}&limit=100`);
  const page = (await reply.json()) as { items: { call: PlannedCall; rule: string | null }[] };
  return new Map(page.items.map((r) => [callText({ tool: r.call.tool, args: r.call.args }), r.rule]));
}

/** Reject every pending request of `framework` through the reviewer API, as a person on the page would. */
async function rejectPending(framework: string): Promise<void> {
  const reply = await server.reviewerFetch(`/api/requests?framework=${encodeURIComponent(framework)}&status=pending&limit=100`);
  for (const request of ((await reply.json()) as { items: { id: string }[] }).items) {
    await server.decide(request.id, { kind: 'reject', message: REJECTION });
  }
}

test('one policy: a table of calls from a Python adapter and from each TypeScript adapter gets the same verdicts', async () => {
  const [python] = await pythonOpsAsync<{ ran: string[]; read: Record<string, string> }>([
    {
      op: 'pydantic_ai_plan',
      url: server.url,
      token: AGENT_TOKEN,
      reviewer_token: REVIEWER_TOKEN,
      pin: server.pin,
      plan: PLAN,
      run: 'parity-python',
      message: REJECTION,
      dir: server.dir,
    },
  ]);
  const pythonSeen = { ran: python!.ran, read: python!.read as unknown as Record<number, string>, asked: await asked('pydantic-ai') };
  const table: Record<string, string[]> = { 'pydantic-ai (Python)': verdicts(pythonSeen) };
  assert.deepEqual(table['pydantic-ai (Python)'], EXPECTED, 'the Python adapter gets the policy’s verdicts');

  for (const sdk of SDKS) {
    const agent = scriptedAgent(sdk, PLAN, { client: server.client(), dir: join(server.dir, sdk), authority: server.pin!, messagesApi: api });
    let outcome = await agent.run(`parity-${sdk}`);
    for (let turns = 0; outcome.status === 'parked'; turns++) {
      assert.ok(turns < PLAN.length, `${sdk} keeps parking`);
      await rejectPending(agent.framework);
      outcome = await agent.resume(outcome.parkedRun);
    }
    table[sdk] = verdicts({ ran: agent.ran, read: agent.read(), asked: await asked(agent.framework) });
  }
  for (const [adapter, found] of Object.entries(table)) {
    assert.deepEqual(found, table['pydantic-ai (Python)'], `${adapter}'s verdicts are the Python adapter's`);
  }
});
