/**
 * No rollback, no freeze, at a TypeScript gate: a live `crossgate serve` signs state heads; the attacker
 * writes the server's database (`rollback` in the testing helper) with genuine signatures only. Every
 * attack runs nothing, the model reads why, and the refusal is in the server's audit log with its reason.
 */

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import {
  CONSUMED,
  type AuditEvent,
  filterBytes,
  HEAD_DIR_ENV,
  HEAD_FILE_FORMAT,
  HEAD_RULE,
  inFilter,
  REVOKED_RULE,
  runChecked,
  type StandingRule,
  type ToolCall,
  TrustedKeys,
  type VerifiedClient,
  verifiedClient,
  verifyStateHead,
} from '@crossgate/client';
import { auditEvents, pythonOpsAsync, startServer, type LiveServer } from '@crossgate/testing';

const POLICY_V1 = `version: 1
default: allow
rules:
  - name: review-ticket-deletes
    verdict: ask
    tool: delete_ticket
    reason: Deleting a ticket cannot be undone.
`;
const POLICY_V2 = `${POLICY_V1}  - name: review-sql
    verdict: ask
    tool: execute_sql
    reason: SQL goes to a person now.
`;

let server: LiveServer;
let kid: string;
before(async () => {
  server = await startServer({ policy: POLICY_V1, settings: 'state_head_every_seconds = 1' });
  kid = TrustedKeys.parse(server.pin!).kids[0]!;
});
after(() => server.stop());

let n = 0;
const call = (tool: string, args: Record<string, string>): ToolCall => ({ framework: 'ai-sdk', tool, args, call_id: `call_${++n}`, run: `run-heads-${n}` });
const gateOf = (headFile?: string): VerifiedClient => verifiedClient(server.client(), server.pin, headFile ? { headFile } : {});
const freshHeadFile = () => join(mkdtempSync(join(tmpdir(), 'crossgate-machine-')), `${kid}.json`);
const rollback = (op: Record<string, unknown>) => pythonOpsAsync([{ op: 'rollback', db: server.db, ...op }]);

/** Run the tool body only if the check lets it: what ran, and what the model read. */
async function reviewed(gate: VerifiedClient, requestId: string, args: Record<string, string>) {
  const ran: string[] = [];
  const answer = await runChecked(gate, await gate.get(requestId), args, async (a) => ran.push(String(a.id)), { actor: 'test' });
  return { ran, told: answer.message };
}

/** Submit a delete, approve it on the reviewer API; the request id. */
async function approved(gate: VerifiedClient, id: string, remember?: object): Promise<string> {
  const submitted = await gate.submit(call('delete_ticket', { id }));
  assert.equal(submitted.verdict.kind, 'ask');
  const requestId = submitted.request!.id;
  await server.decide(requestId, { kind: 'approve', ...(remember ? { remember } : {}) });
  return requestId;
}

async function refusedEvents(reason: string, requestId?: string): Promise<AuditEvent[]> {
  return (await auditEvents(server, requestId)).filter((e) => e.payload.refused === reason);
}

/** Wait (the server signs every second; a gate reads every 2 s) until `gate`'s head shows `shown`. */
async function headShows(gate: VerifiedClient, shown: (head: Awaited<ReturnType<NonNullable<VerifiedClient['heads']>['current']>>) => boolean) {
  const deadline = Date.now() + 20_000;
  while (!shown(await gate.heads!.current())) {
    assert.ok(Date.now() < deadline, 'the gate never saw the head it waited for');
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

test('a verified gate keeps the newest head in the file Python gates use; an approval runs once and leaves its marker', async () => {
  const gate = gateOf();
  assert.equal((await gate.evaluateToRun(call('read_ticket', { id: 't1' }))).kind, 'allow');
  const file = join(process.env[HEAD_DIR_ENV]!, `${kid}.json`);
  assert.equal(statSync(file).mode & 0o777, 0o600);
  const stored = JSON.parse(readFileSync(file, 'utf8')) as { format: string; head: string };
  assert.equal(stored.format, HEAD_FILE_FORMAT);
  assert.equal(verifyStateHead(stored.head, TrustedKeys.parse(server.pin!)).policy_version, 1);

  const requestId = await approved(gate, 't3');
  assert.deepEqual(await reviewed(gate, requestId, { id: 't3' }), { ran: ['t3'], told: '' });
  const marker = join(process.env[HEAD_DIR_ENV]!, `${kid}.applied`, createHash('sha256').update(requestId).digest('hex').slice(0, 40));
  const [token] = (await gate.get(requestId)).signatures ?? [];
  const applyBy = (JSON.parse(Buffer.from(token!.split('.')[1]!, 'base64url').toString()) as { apply_by: string }).apply_by;
  assert.equal(Math.round(statSync(marker).mtimeMs / 1000), Math.round(Date.parse(applyBy) / 1000), 'dated with its apply_by');
});

test('an applied approval set back to decided runs nothing again: consumed, by this machine’s marker and by another machine’s head', async () => {
  const gate = gateOf();
  for (const [id, machine] of [['t4', undefined], ['t5', freshHeadFile()]] as const) {
    const requestId = await approved(gate, id);
    assert.deepEqual((await reviewed(gate, requestId, { id })).ran, [id]);
    await rollback({ what: 'applied', request_id: requestId });
    const again = gateOf(machine);
    // Another machine has no marker: it refuses once a head names the approval consumed.
    if (machine !== undefined) await headShows(again, (head) => inFilter(filterBytes(head.consumed), requestId));
    assert.deepEqual(await reviewed(again, requestId, { id }), { ran: [], told: CONSUMED('delete_ticket', requestId) });
    const closed = await gate.get(requestId);
    assert.equal(closed.status, 'cancelled');
    assert.equal(closed.closed_reason, CONSUMED('delete_ticket', requestId));
    const [event] = await refusedEvents('consumed', requestId);
    assert.match(String(event?.payload.problem), /was applied already/);
  }
});

test('the store frozen, the gate ten minutes on: stale_head for a call the policy allows and for an approval', async () => {
  const gate = gateOf();
  const requestId = await approved(gate, 't8');
  gate.heads!.clock = () => new Date(Date.now() + 10 * 60_000); // every head the server holds lasts five
  const verdict = await gate.evaluateToRun(call('read_ticket', { id: 't1' }));
  assert.equal(verdict.kind, 'deny');
  assert.match(verdict.reason, /^crossgate did not run read_ticket: the newest state head signed by the authority expired at \S+\+00:00 \(the store is frozen/);
  assert.match(verdict.reason, /crossgate server must be running/);
  const { ran, told } = await reviewed(gate, requestId, { id: 't8' });
  assert.deepEqual(ran, []);
  assert.match(told, /^crossgate did not run delete_ticket: the newest state head signed by the authority expired at/);
  assert.equal((await gate.get(requestId)).status, 'cancelled');
  assert.equal((await refusedEvents('stale_head', requestId)).length, 1);
  assert.ok((await refusedEvents('stale_head')).some((e) => e.kind === 'refused' && e.payload.tool === 'read_ticket'));
});

test('a standing rule revoked, then restored in the store, allows nothing: revoked_rule', async () => {
  const gate = gateOf();
  const requestId = await approved(gate, 't6', { scope: 'forever', match: 'tool' });
  assert.deepEqual((await reviewed(gate, requestId, { id: 't6' })).ran, ['t6']);
  const allowed = await gate.evaluateToRun(call('delete_ticket', { id: 't7' }));
  assert.equal(allowed.kind, 'allow', 'the signed rule allows the next delete');
  const rule = allowed.standing_rule as StandingRule;
  assert.equal((await server.reviewerFetch(`/api/rules/${rule.id}`, { method: 'DELETE' })).status, 200);
  await rollback({ what: 'revocation', rule_id: rule.id });
  assert.equal((await server.client().evaluate(call('delete_ticket', { id: 't7' }))).standing_rule?.id, rule.id, 'the server allows by it again');
  await headShows(gate, (head) => head.revoked_rules.includes(rule.id));
  const refused = await gate.evaluateToRun(call('delete_ticket', { id: 't7' }));
  assert.equal(refused.kind, 'deny');
  assert.equal(refused.rule, HEAD_RULE);
  assert.equal(refused.reason, REVOKED_RULE(rule.id, 'delete_ticket'));
  const [event] = await refusedEvents('revoked_rule');
  assert.equal(event?.payload.rule, rule.id);
  assert.equal(event?.payload.reason, refused.reason);
});

test('the newest signed policy version deleted, then a fresh server process: the server denies by its own memory, a gate by its head', async () => {
  const v2 = join(server.dir, 'policy-v2.yaml');
  writeFileSync(v2, POLICY_V2);
  const applied = await server.operatorCli('policy', 'apply', v2);
  assert.equal(applied.status, 0, applied.stderr);
  const gate = gateOf();
  await headShows(gate, (head) => head.policy_version === 2);
  const sql = call('execute_sql', { query: 'select 1' });
  assert.equal((await gate.evaluate(sql)).kind, 'ask');

  // The restarted server remembers version 2 (its signer's file, and the heads stored): it refuses version 1 itself.
  await rollback({ what: 'policy_version', version: 2 });
  await server.restart();
  const byServer = await server.client().evaluate(sql);
  assert.deepEqual([byServer.kind, byServer.rule], ['deny', HEAD_RULE], 'the restarted server holds version 1 to its floor');
  assert.match(byServer.reason, /^crossgate did not run execute_sql: the store shows policy version 1, older than version 2 already signed\. Nothing ran\./);
  assert.equal((await gateOf().evaluateToRun(sql)).kind, 'deny');
  assert.equal((await refusedEvents('rolled_back')).length, 2, 'the server recorded each refusal');

  // A server that forgot too (its signer's file and the stored heads gone) evaluates version 1: the gate's head refuses it.
  const kid = TrustedKeys.parse(server.pin!).kids[0]!;
  await server.restart(async () => {
    rmSync(join(process.env[HEAD_DIR_ENV]!, `${kid}.signer.json`), { force: true });
    await rollback({ what: 'head' });
  });
  assert.equal((await server.client().evaluate(sql)).kind, 'allow', 'the forgetful server evaluates version 1');
  const verdict = await gateOf().evaluateToRun(sql);
  assert.equal(verdict.kind, 'deny');
  assert.equal(
    verdict.reason,
    'crossgate did not run execute_sql: the store\'s current policy is version 1, older than version 2 that the authority\'s ' +
      'state head names (a rollback). Nothing ran. Do not retry it; tell the user the store was rolled back and an operator must look at it.',
  );
  assert.equal((await refusedEvents('rolled_back')).length, 3);
});
