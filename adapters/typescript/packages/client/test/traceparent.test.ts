import assert from 'node:assert/strict';
import { test } from 'node:test';

import { AgentClient } from '@crossgate/client';

const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

function recording(): { fetch: typeof fetch; sent: Headers[] } {
  const sent: Headers[] = [];
  const fake = (async (_url: string | URL | Request, init?: RequestInit) => {
    sent.push(new Headers(init?.headers));
    return new Response(JSON.stringify({ kind: 'allow', reason: '', rule: null }), {
      status: 200,
      headers: { 'content-type': 'application/json' },
    });
  }) as typeof fetch;
  return { fetch: fake, sent };
}

const CALL = { framework: 'openai-agents', tool: 'read', args: {}, call_id: 'c', run: 'r' };

test('the current traceparent goes with every exchange', async () => {
  const { fetch, sent } = recording();
  const client = new AgentClient({ baseUrl: 'http://127.0.0.1:1', token: 't'.repeat(20), fetch, traceparent: () => TRACEPARENT });
  await client.evaluate(CALL);
  assert.equal(sent[0]?.get('traceparent'), TRACEPARENT);
});

test('no traceparent, or one that is not a traceparent, sends none', async () => {
  for (const value of [undefined, 'x\r\nX-Injected: 1', '00-short-01']) {
    const { fetch, sent } = recording();
    const client = new AgentClient({ baseUrl: 'http://127.0.0.1:1', token: 't'.repeat(20), fetch, traceparent: () => value });
    await client.evaluate(CALL);
    assert.equal(sent[0]?.has('traceparent'), false, String(value));
  }
});
