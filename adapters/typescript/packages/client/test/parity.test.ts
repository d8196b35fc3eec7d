import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import type { ToolCall } from '@crossgate/client';
import { pythonOps, startServer, type LiveServer } from '@crossgate/testing';

// One policy: rules by tool, by argument, by framework, and the default.
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
  - name: mastra-may-list
    verdict: allow
    tool: list_tickets
    frameworks: [mastra]
  - name: ai-sdk-no-email
    verdict: deny
    tool: send_email
    frameworks: [ai-sdk]
`;

let server: LiveServer;
before(async () => {
  server = await startServer({ policy: POLICY });
});
after(() => server.stop());

test('one policy: a call gets the same verdict from the Python policy as each TypeScript framework gets from the server', async () => {
  const calls: Omit<ToolCall, 'framework'>[] = [
    { tool: 'read_ticket', args: { id: 't1' } },
    { tool: 'execute_sql', args: { query: 'DROP TABLE tickets' } },
    { tool: 'execute_sql', args: { query: 'select * from tickets' } },
    { tool: 'execute_sql', args: { query: 'update tickets set x = 1' } },
    { tool: 'delete_ticket', args: { id: 't3' } },
    { tool: 'list_tickets', args: {} },
    { tool: 'send_email', args: { to: 'a@example.com' } },
  ];
  const client = server.client();
  const frameworks = ['ai-sdk', 'mastra', 'openai-agents-ts', 'claude-agent-sdk-ts'];
  const table = frameworks.flatMap((framework) => calls.map((c) => ({ ...c, framework, run: 'parity' })));
  // One Python process for the whole table.
  const python = pythonOps<{ kind: string; rule: string | null }>(table.map((call) => ({ op: 'evaluate', policy: server.policyFile, call })));
  const served = await Promise.all(table.map((call) => client.evaluate(call)));
  for (const [i, call] of table.entries()) {
    assert.deepEqual([served[i]?.kind, served[i]?.rule], [python[i]?.kind, python[i]?.rule], `the verdict of ${call.framework}'s ${call.tool}`);
  }
  const verdict = (framework: string, tool: string) => client.evaluate({ framework, tool, args: {} }).then((v) => v.kind);
  assert.equal(await verdict('mastra', 'list_tickets'), 'allow');
  assert.equal(await verdict('ai-sdk', 'list_tickets'), 'ask');
  assert.equal(await verdict('ai-sdk', 'send_email'), 'deny');
});
