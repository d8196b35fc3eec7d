import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { after, before, test } from 'node:test';

import {
  AgentClient,
  ConflictError,
  ForbiddenError,
  NotFoundError,
  UnreachableError,
  type ToolCall,
} from '@crossgate/client';
import { OTHER_AGENT_TOKEN, REVIEWER_TOKEN, startServer, type LiveServer } from '@crossgate/testing';

let server: LiveServer;
let client: AgentClient;
before(async () => {
  server = await startServer();
  client = server.client();
});
after(() => server.stop());

const call = (args: Record<string, string>, run = 'run-live'): ToolCall => ({
  framework: 'ai-sdk',
  tool: 'delete_ticket',
  args,
  call_id: `call-${args.id}`,
  run,
});

test('submit, decide on the reviewer API, wait, apply exactly once, record the outcome', async () => {
  const submitted = await client.submit(call({ id: 't3' }), { request_id: 'req_live_t3', capabilities: ['approve', 'reject'] });
  assert.equal(submitted.verdict.kind, 'ask');
  assert.equal(submitted.request?.status, 'pending');
  assert.deepEqual(submitted.request?.allowed_decisions, ['approve', 'reject']);
  const waiting = client.wait('req_live_t3', 20);
  await new Promise((resolve) => setTimeout(resolve, 200));
  await server.decide('req_live_t3', { kind: 'approve' });
  const decided = await waiting;
  assert.equal(decided.status, 'decided');
  assert.equal(decided.decision?.reviewer, 'alice');
  const applied = await client.markApplied('req_live_t3', { id: 't3' });
  assert.equal(applied.status, 'applied');
  await assert.rejects(client.markApplied('req_live_t3', { id: 't3' }), (e: unknown) => e instanceof ConflictError && e.code === 'already_applied');
  assert.equal(await client.outcome('req_live_t3'), null);
  await client.recordOutcome({ request_id: 'req_live_t3', ran: true, result: 'deleted ticket t3' });
  const outcome = await client.outcome('req_live_t3');
  assert.equal(outcome?.payload.ran, true);
  assert.equal(outcome?.payload.result, 'deleted ticket t3');
});

test('the same request id finds the same request; the same id for other arguments is refused', async () => {
  const first = await client.submit(call({ id: 't2' }), { request_id: 'req_live_t2' });
  const again = await client.submit(call({ id: 't2' }), { request_id: 'req_live_t2' });
  assert.equal(again.request?.id, first.request?.id);
  await assert.rejects(client.submit(call({ id: 't1' }), { request_id: 'req_live_t2' }));
});

test('evaluate and the policy are the server’s; the policy is fetched again only when it changed', async () => {
  assert.equal((await client.evaluate(call({ id: 't1' }))).kind, 'ask');
  const sql = { framework: 'ai-sdk', tool: 'execute_sql', args: { query: 'DROP TABLE tickets' } };
  assert.equal((await client.evaluate(sql)).kind, 'deny');
  assert.equal((await client.evaluate({ ...sql, tool: 'read_ticket', args: { id: 't1' } })).kind, 'allow');
  const policy = await client.policy();
  assert.equal(policy.document.default, 'allow');
  assert.equal(await client.policy(), policy, 'a 304 answers from the cache');
});

test('prepare then park stores the requests with the run; a parked run is claimed once', async () => {
  const prepared = await client.prepare(call({ id: 't1' }, 'run-park'), { request_id: 'req_live_park' });
  assert.equal(prepared.stored, false);
  await assert.rejects(client.get('req_live_park'), NotFoundError);
  const parkedRun = await client.park({
    framework: 'ai-sdk',
    run: 'run-park',
    request_ids: ['req_live_park'],
    state: '{"messages":[]}',
    metadata: { agent: 'tickets' },
    new_requests: prepared.request ? [prepared.request] : [],
  });
  assert.equal((await client.get('req_live_park')).status, 'pending');
  assert.equal((await client.getParked(parkedRun.id)).state, '{"messages":[]}');
  assert.ok((await client.parkedRuns({ framework: 'ai-sdk' })).some((p) => p.id === parkedRun.id));
  assert.equal(await client.isReady(parkedRun.id), false);
  await server.decide('req_live_park', { kind: 'reject', message: 'No.' });
  assert.equal(await client.isReady(parkedRun.id), true);
  const claimed = await client.claimParked(parkedRun.id, 'worker-a', 60);
  assert.equal(claimed.status, 'resuming');
  await assert.rejects(client.claimParked(parkedRun.id, 'worker-b', 60), (e: unknown) => e instanceof ConflictError && e.code === 'lease_held');
  assert.equal((await client.finishParked(parkedRun.id, 'worker-a', { outcome: 'finished' })).status, 'resumed');
  await assert.rejects(client.claimParked(parkedRun.id, 'worker-b', 60), (e: unknown) => e instanceof ConflictError && e.code === 'already_resumed');
});

test('another agent sees nothing of this one’s (404), and a reviewer token is no agent credential (403)', async () => {
  const other = server.client({ token: OTHER_AGENT_TOKEN });
  await assert.rejects(other.get('req_live_t3'), NotFoundError);
  await assert.rejects(other.markApplied('req_live_t2'), NotFoundError);
  const reviewer = server.client({ token: REVIEWER_TOKEN });
  await assert.rejects(reviewer.evaluate(call({ id: 't1' })), (e: unknown) => e instanceof ForbiddenError && e.status === 403);
  const stranger = server.client({ token: 'no-such-token-0123456789' });
  await assert.rejects(stranger.evaluate(call({ id: 't1' })), (e: unknown) => e instanceof ForbiddenError && e.status === 401);
});

/** A proxy in front of the server that forwards the first `drops` requests, then cuts the line before answering. */
function lossyProxy(target: string, drops: number): Promise<{ url: string; keys: string[]; close(): void }> {
  const keys: string[] = [];
  let seen = 0;
  const proxy: Server = createServer((incoming, outgoing) => {
    keys.push(String(incoming.headers['idempotency-key'] ?? ''));
    const forward = httpRequest(`${target}${incoming.url}`, { method: incoming.method, headers: incoming.headers }, (reply) => {
      if (seen++ < drops) {
        reply.resume();
        reply.on('end', () => outgoing.socket?.destroy());
        return;
      }
      outgoing.writeHead(reply.statusCode ?? 502, reply.headers);
      reply.pipe(outgoing);
    });
    incoming.pipe(forward);
  });
  return new Promise((resolve) =>
    proxy.listen(0, '127.0.0.1', () => {
      const address = proxy.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      resolve({ url: `http://127.0.0.1:${port}`, keys, close: () => proxy.close() });
    }),
  );
}

test('a lost answer is retried with the same idempotency key: one request, the first answer replayed', async () => {
  const proxy = await lossyProxy(server.url, 2);
  try {
    const lossy = server.client({ baseUrl: proxy.url });
    const before = (await client.listRequests({ run: 'run-lossy' })).items.length;
    const submission = await lossy.submit(call({ id: 't9' }, 'run-lossy'));
    assert.equal(proxy.keys.length, 3);
    assert.equal(new Set(proxy.keys).size, 1, 'every attempt carried the same key');
    assert.ok(proxy.keys[0]);
    const after = (await client.listRequests({ run: 'run-lossy' })).items;
    assert.equal(after.length, before + 1, 'the server made the request once');
    assert.equal(after[0]?.id, submission.request?.id);
  } finally {
    proxy.close();
  }
});

test('an unreachable server fails closed within the deadline, in one line', async () => {
  const dead = new AgentClient({ baseUrl: 'http://127.0.0.1:9', token: 'x'.repeat(20), deadlineMs: 400 });
  const started = Date.now();
  await assert.rejects(dead.markApplied('req_x'), (e: unknown) => {
    assert.ok(e instanceof UnreachableError);
    assert.match(e.message, /did not answer POST \/requests\/req_x\/applied .*nothing was run/);
    return true;
  });
  assert.ok(Date.now() - started < 3_000);
});

test('the server’s OpenAPI document has every route and field the client uses', async () => {
  const reply = await fetch(`${server.url}/openapi.json`);
  const document = (await reply.json()) as {
    paths: Record<string, Record<string, { tags?: string[]; parameters?: { name: string }[] }>>;
    components: { schemas: Record<string, { properties?: Record<string, unknown>; required?: string[] }> };
  };
  const routes: [string, string][] = [
    ['get', '/policy'],
    ['get', '/state-head'],
    ['post', '/evaluate'],
    ['post', '/requests'],
    ['get', '/requests'],
    ['get', '/requests/{request_id}'],
    ['post', '/requests/{request_id}/cancel'],
    ['post', '/requests/{request_id}/applied'],
    ['post', '/refusals'],
    ['post', '/outcomes'],
    ['get', '/requests/{request_id}/outcome'],
    ['post', '/expire'],
    ['post', '/parked'],
    ['get', '/parked'],
    ['get', '/parked/{parked_id}'],
    ['get', '/parked/{parked_id}/ready'],
    ['post', '/parked/{parked_id}/claim'],
    ['post', '/parked/{parked_id}/finish'],
  ];
  for (const [method, path] of routes) {
    const operation = document.paths[`/api/agent/v1${path}`]?.[method];
    assert.ok(operation, `${method.toUpperCase()} ${path} is in the OpenAPI document`);
    assert.ok(operation.tags?.includes('agent'), `${path} is tagged agent`);
  }
  const parameters = (path: string, method: string) => (document.paths[`/api/agent/v1${path}`]?.[method]?.parameters ?? []).map((p) => p.name);
  assert.ok(parameters('/requests/{request_id}', 'get').includes('wait'));
  assert.ok(parameters('/requests', 'post').includes('Idempotency-Key'));
  assert.ok(parameters('/policy', 'get').includes('If-None-Match'));
  for (const name of ['status', 'framework', 'run']) assert.ok(parameters('/parked', 'get').includes(name), name);
  // The fields the client sends and reads, in the schemas the server validates them with.
  const fields: Record<string, string[]> = {
    RequestIn: ['call', 'args_schema', 'description', 'requested_by', 'capabilities', 'request_id', 'timeout_seconds', 'store'],
    SubmissionOut: ['verdict', 'request', 'stored'],
    ParkIn: ['framework', 'run', 'request_ids', 'state', 'metadata', 'new_requests'],
    OutcomeIn: ['request_id', 'ran', 'result', 'error', 'call'],
    ClaimIn: ['owner', 'lease_seconds'],
    FinishIn: ['owner', 'status', 'outcome'],
    AppliedIn: ['args'],
    CancelIn: ['reason'],
    RefusalIn: ['request_id', 'call', 'reason', 'problem', 'message', 'rule'],
    ReadyOut: ['ready'],
    PolicyOut: ['version', 'document', 'rules_version', 'policy_version', 'local'],
    StateHeadOut: ['token'],
    ToolCall: ['framework', 'tool', 'args', 'call_id', 'run', 'session', 'agent', 'context'],
    Verdict: ['kind', 'reason', 'rule', 'allowed_decisions', 'description', 'timeout_seconds', 'apply_within_seconds', 'approvals', 'standing_rule'],
    StandingRule: ['id', 'effect', 'tool', 'match', 'arg_patterns', 'args_fingerprint', 'agent', 'framework', 'scope', 'run', 'session',
      'message', 'created_at', 'created_by', 'source_request', 'expires_at', 'revoked_at', 'revoked_by', 'signature'],
    ApprovalRequest: ['id', 'call', 'fingerprint', 'status', 'reason', 'rule', 'description', 'allowed_decisions', 'args_schema',
      'requested_by', 'created_at', 'expires_at', 'decision', 'decided_at', 'applied_at', 'closed_reason', 'apply_within_seconds',
      'approvals_required', 'signatures'],
    ParkedRun: ['id', 'framework', 'run', 'request_ids', 'state', 'metadata', 'status', 'created_at', 'updated_at', 'lease_owner',
      'lease_until', 'attempts', 'outcome'],
  };
  const schemas = document.components.schemas;
  for (const [schema, names] of Object.entries(fields)) {
    const found = Object.keys(schemas).find((s) => s === schema || s === `${schema}-Input` || s === `${schema}-Output`);
    assert.ok(found, `schema ${schema} is in the OpenAPI document`);
    const properties = Object.keys(schemas[found]?.properties ?? {});
    for (const name of names) assert.ok(properties.includes(name), `${schema}.${name} is in the OpenAPI document`);
  }
});
