import assert from 'node:assert/strict';
import { test } from 'node:test';

import {
  fingerprint,
  jsonDigest,
  PublicKey,
  SignatureError,
  TrustedKeys,
  verifyDecision,
  type Decision,
  type SignatureReason,
} from '@crossgate/client';
import { pythonOps } from '@crossgate/testing';

const ARGS = { id: 't3' };
const FP = fingerprint('delete_ticket', ARGS);
const REQUEST = 'req_aisdk_0123';
const base = {
  typ: 'crossgate.decision.v1',
  request_id: REQUEST,
  tool: 'delete_ticket',
  fingerprint: FP,
  kind: 'approve',
  args_fingerprint: null,
  response_digest: null,
  message_digest: null,
  reviewer: 'alice',
  reviewer_kind: 'reviewer',
  channel: 'api',
  decided_at: '2026-03-01T10:00:00Z',
  apply_by: null,
  policy_version: 3,
};
const MESSAGE = 'Keep t3 for the audit. Do not retry.';
const claims = {
  approve: base,
  edit: { ...base, kind: 'edit', args_fingerprint: fingerprint('delete_ticket', { id: 't1' }) },
  reject: { ...base, kind: 'reject', message_digest: jsonDigest(MESSAGE) },
  respond: { ...base, kind: 'respond', response_digest: jsonDigest('t3 is archived already') },
  other_request: { ...base, request_id: 'req_aisdk_other' },
  lapsing: { ...base, apply_by: '2026-03-01T10:05:00Z' },
};
const names = Object.keys(claims) as (keyof typeof claims)[];

// One Python process: the authority's keys, and a token per claims, signed by crossgate itself.
const [mainKey, otherKey, ...signed] = pythonOps([
  { op: 'key', key: 'main' },
  { op: 'key', key: 'other' },
  ...names.map((name) => ({ op: 'sign', key: 'main', claims: claims[name] })),
  { op: 'sign', key: 'other', claims: base },
  { op: 'sign_checkpoint', key: 'main', at: '2026-03-01T10:00:00Z' },
]);
const token = Object.fromEntries(names.map((name, i) => [name, signed[i]?.token ?? ''])) as Record<keyof typeof claims, string>;
const otherKeyToken = signed[names.length]?.token ?? '';
const checkpointToken = signed[names.length + 1]?.token ?? '';
const trusted = TrustedKeys.parse(`# the authority\n${mainKey?.pin}\n`);
const expected = { requestId: REQUEST, fingerprint: FP };

function refused(reason: SignatureReason, run: () => unknown): void {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof SignatureError, String(error));
    assert.equal(error.reason, reason, error.message);
    assert.ok(!error.message.includes('\n'), 'one line');
    return true;
  });
}

test('a pinned key has the kid Python gives it, from its pin and from its PEM block', () => {
  assert.equal(PublicKey.parse(mainKey?.pin ?? '').kid, mainKey?.kid);
  assert.equal(PublicKey.parse(mainKey?.pem ?? '').kid, mainKey?.kid);
  assert.deepEqual(TrustedKeys.parse(`${mainKey?.pem}, ${otherKey?.pin}`).kids.sort(), [mainKey?.kid, otherKey?.kid].sort());
});

test('each kind of decision signed by the Python authority verifies, bound to its content', () => {
  const decisions: Record<string, Decision> = {
    approve: { kind: 'approve', reviewer: 'alice', fingerprint: FP },
    edit: { kind: 'edit', args: { id: 't1' }, reviewer: 'alice' },
    reject: { kind: 'reject', message: MESSAGE, reviewer: 'alice' },
    respond: { kind: 'respond', content: 't3 is archived already' },
  };
  for (const [kind, decision] of Object.entries(decisions)) {
    const verified = verifyDecision(token[kind as keyof typeof claims], trusted, { ...expected, decision });
    assert.equal(verified.kind, kind);
    assert.equal(verified.reviewer, 'alice');
    assert.equal(verified.policy_version, 3);
  }
});

test('a decision that differs from the signed one is refused: kind, edited arguments, message, reviewer', () => {
  refused('binding', () => verifyDecision(token.approve, trusted, { ...expected, decision: { kind: 'edit', args: ARGS } }));
  refused('binding', () => verifyDecision(token.edit, trusted, { ...expected, decision: { kind: 'edit', args: { id: 't2' } } }));
  refused('binding', () => verifyDecision(token.reject, trusted, { ...expected, decision: { kind: 'reject', message: 'Go ahead.' } }));
  refused('binding', () => verifyDecision(token.respond, trusted, { ...expected, decision: { kind: 'respond', content: 'other' } }));
  refused('binding', () => verifyDecision(token.approve, trusted, { ...expected, decision: { kind: 'approve', reviewer: 'mallory' } }));
});

test('a token signed for another request, or another call, is refused (replay, re-targeting)', () => {
  refused('binding', () => verifyDecision(token.other_request, trusted, expected));
  refused('binding', () => verifyDecision(token.approve, trusted, { ...expected, fingerprint: fingerprint('delete_ticket', { id: 't1' }) }));
});

test('keys: not pinned, revoked, or a key of the agent’s own making', () => {
  refused('unknown_key', () => verifyDecision(otherKeyToken, trusted, expected));
  refused('revoked_key', () => verifyDecision(token.approve, TrustedKeys.parse(`${mainKey?.pin} revoked:${mainKey?.kid}`), expected));
});

test('an approval past its apply-by time has lapsed', () => {
  const at = (iso: string) => ({ ...expected, now: new Date(iso) });
  assert.equal(verifyDecision(token.lapsing, trusted, at('2026-03-01T10:04:59Z')).apply_by, claims.lapsing.apply_by);
  refused('lapsed', () => verifyDecision(token.lapsing, trusted, at('2026-03-01T10:05:01Z')));
});

test('tampered tokens are refused before their payload is read', () => {
  const [header = '', payload = '', signature = ''] = token.approve.split('.');
  const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const forged = b64({ ...base, request_id: REQUEST, kind: 'approve', reviewer: 'security-lead' });
  const flipped = (signature[0] === 'A' ? 'B' : 'A') + signature.slice(1);
  refused('bad_signature', () => verifyDecision(`${header}.${forged}.${signature}`, trusted, expected));
  refused('bad_signature', () => verifyDecision(`${header}.${payload}.${flipped}`, trusted, expected));
  refused('bad_signature', () => verifyDecision(`${header}.${payload}.${signature.slice(0, 40)}`, trusted, expected));
  refused('algorithm', () => verifyDecision(`${b64({ alg: 'none', kid: mainKey?.kid })}.${payload}.`, trusted, expected));
  refused('algorithm', () => verifyDecision(`${b64({ alg: 'HS256', kid: mainKey?.kid })}.${payload}.${signature}`, trusted, expected));
  refused('malformed', () => verifyDecision(`${b64({ alg: 'EdDSA', kid: mainKey?.kid, jku: 'x' })}.${payload}.${signature}`, trusted, expected));
  refused('unknown_key', () => verifyDecision(`${b64({ alg: 'EdDSA' })}.${payload}.${signature}`, trusted, expected));
  refused('malformed', () => verifyDecision(`${header}.${payload}=.${signature}`, trusted, expected));
  refused('malformed', () => verifyDecision(`${header}.${payload}`, trusted, expected));
  refused('malformed', () => verifyDecision('', trusted, expected));
  refused('malformed', () => verifyDecision('a'.repeat(70_000), trusted, expected));
  // A segment whose unused trailing bits differ decodes to the same bytes: it must still be refused.
  const last = signature.at(-1) ?? 'A';
  const sibling = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'.charAt(
    'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'.indexOf(last) ^ 1,
  );
  refused('malformed', () => verifyDecision(`${header}.${payload}.${signature.slice(0, -1)}${sibling}`, trusted, expected));
});

test('a signed token of another kind (an audit checkpoint) is not a decision', () => {
  refused('wrong_type', () => verifyDecision(checkpointToken, trusted, expected));
});

test('pin text that is not a public key is refused with one line', () => {
  for (const text of ['', 'ed25519:abc', '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----', '{"keys": []}']) {
    assert.throws(() => TrustedKeys.parse(text), (error: unknown) => error instanceof Error && !error.message.includes('\n'));
  }
});
