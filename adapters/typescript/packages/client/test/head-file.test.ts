/**
 * One memory for the gates of both languages on one machine: the head file and the applied markers as
 * Python's `HeadFile` writes and reads them, and the consumed filter as Python's `build_filter` makes it.
 */

import assert from 'node:assert/strict';
import { mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import { filterBytes, HeadFile, HeadGuard, inFilter, SignatureError, TrustedKeys } from '@crossgate/client';
import { pythonOps } from '@crossgate/testing';

// 4096 bits of zeros, base64url without padding, as build_filter([]) writes it
const EMPTY = Buffer.alloc(512).toString('base64url');
const now = Date.now();
const at = (seconds: number) => new Date(now + seconds * 1000).toISOString();
const claims = (issued: number) => ({
  consumed: EMPTY,
  issued_at: at(issued),
  expires_at: at(issued + 300),
  policy_version: null,
  policy_digest: null,
  rules_version: 3,
  revoked_rules: [],
  audit_seq: 7,
  audit_hash: 'a'.repeat(64),
  consumed_count: 0,
});
const [key, second, older, newer, forged, rotated] = pythonOps<Record<string, string>>([
  { op: 'key', key: 'main' },
  { op: 'key', key: 'second' },
  { op: 'sign_head', key: 'main', claims: { ...claims(-60)} },
  { op: 'sign_head', key: 'main', claims: { ...claims(-10)} },
  { op: 'sign_head', key: 'forger', claims: { ...claims(-1)} },
  { op: 'sign_head', key: 'second', claims: { ...claims(-5)} },
]);
const keys = TrustedKeys.parse(key!.pin!);
const python = (op: object) => pythonOps<{ head: string | null; applied: boolean[] }>([{ op: 'head_file', ...op }])[0]!;
const issuedAt = (token: string) => (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { issued_at: string }).issued_at;
const machine = () => join(mkdtempSync(join(tmpdir(), 'crossgate-heads-x-')), `${keys.kids[0]}.json`);

test('the consumed filter reads as Python’s: every id in it, and the same answer for thousands of others', () => {
  for (const size of [250, 600]) {
    const ids = Array.from({ length: size }, (_, i) => `req_${size}_${i}`);
    const probe = [...ids, ...Array.from({ length: 4000 }, (_, i) => `other_${i}`)];
    const [built] = pythonOps<{ filter: string; answers: boolean[] }>([{ op: 'consumed_filter', ids, probe }]);
    const raw = filterBytes(built!.filter);
    assert.equal(raw.length * 8, size === 250 ? 4096 : 16384);
    assert.deepEqual(probe.map((id) => inFilter(raw, id)), built!.answers);
    assert.ok(built!.answers.slice(0, size).every(Boolean), 'no consumed approval reads as not consumed');
  }
  assert.throws(() => filterBytes(Buffer.alloc(100).toString('base64url')));
});

test('a head file Python wrote is read here, and the one this gate writes is read by Python', async () => {
  const path = machine();
  assert.equal(python({ path, token: older!.token }).head, older!.token);
  const file = new HeadFile(path);
  assert.equal(file.read(), older!.token);
  const guard = new HeadGuard(keys, async () => newer!.token!, file);
  assert.equal((await guard.current()).issued_at, issuedAt(newer!.token!));
  assert.equal(python({ path }).head, newer!.token, 'Python reads the newer head this gate stored');
  assert.equal(statSync(path).mode & 0o777, 0o600);
  // A gate started later on this machine believes no older head the server shows.
  const later = new HeadGuard(keys, async () => older!.token!, new HeadFile(path));
  assert.equal((await later.current()).issued_at, issuedAt(newer!.token!));
});

test('applied markers: Python sees the ones this gate leaves, this gate the ones Python leaves', () => {
  const path = machine();
  const file = new HeadFile(path);
  file.markApplied('req_later', at(3600));
  file.markApplied('req_never', null);
  file.markApplied('req_lapsed', at(-5));
  const seen = python({ path, applied: { req_python: at(3600) }, probe: ['req_later', 'req_never', 'req_lapsed', 'req_unknown'] });
  assert.deepEqual(seen.applied, [true, true, false, false]);
  assert.ok(file.wasApplied('req_python', new Date()));
  assert.ok(!file.wasApplied('req_unknown', new Date()));
  const guard = new HeadGuard(keys, async () => newer!.token!, file);
  assert.ok(guard.consumed('req_python') && guard.consumed('req_never') && !guard.consumed('req_lapsed'));
  assert.equal(statSync(file.appliedDir).mode & 0o777, 0o700);
});

test('a head another key signed, in the file or from the server, is ignored: no head, stale_head', async () => {
  const warnings: string[] = [];
  const listen = (warning: Error) => warnings.push(warning.message);
  process.on('warning', listen);
  try {
    const path = machine();
    python({ path, token: forged!.token });
    const guard = new HeadGuard(keys, async () => forged!.token!, new HeadFile(path));
    await assert.rejects(guard.current(), (e: unknown) => e instanceof SignatureError && e.reason === 'stale_head' && /no state head signed by the authority/.test(e.message));
    writeFileSync(path, '{"format": "crossgate-head/0", "head": "x"}');
    assert.equal(new HeadFile(path).read(), null);
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('warning', listen);
  }
  assert.ok(warnings.some((w) => w.startsWith('crossgate: ignoring a state head that does not verify: the token is signed with key')), String(warnings));
  assert.ok(warnings.some((w) => /not a crossgate-head\/1 file/.test(w)));
});

test('a gate pinning a keyring reads the head of each live key: a rotation is followed, a head under the wrong kid is not', async () => {
  const ring = TrustedKeys.parse(`${key!.pin} ${second!.pin}`);
  const [mainKid, secondKid] = ring.kids as [string, string];
  const asked: string[] = [];
  const serve = (heads: Record<string, string | null>) => async (kid: string) => {
    asked.push(kid);
    return heads[kid] ?? null;
  };
  const rotatedGuard = new HeadGuard(ring, serve({ [mainKid]: older!.token!, [secondKid]: rotated!.token! }), new HeadFile(machine()));
  assert.equal((await rotatedGuard.current()).issued_at, issuedAt(rotated!.token!), 'the newer head, signed with the second key');
  assert.deepEqual(asked, [mainKid, secondKid]);

  const warnings: string[] = [];
  const listen = (warning: Error) => warnings.push(warning.message);
  process.on('warning', listen);
  try {
    // the second key's head filed under the first key's kid, and nothing under the second's
    const misfiled = new HeadGuard(ring, serve({ [mainKid]: rotated!.token! }), new HeadFile(machine()));
    await assert.rejects(misfiled.current(), (e: unknown) => e instanceof SignatureError && e.reason === 'stale_head');
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('warning', listen);
  }
  assert.ok(warnings.some((w) => w.startsWith(`crossgate: ignoring a state head filed under key ${mainKid} but signed with key ${secondKid}`)), String(warnings));

  asked.length = 0;
  const revoked = TrustedKeys.parse(`${key!.pin} ${second!.pin} revoked:${mainKid}`);
  const afterRevocation = new HeadGuard(revoked, serve({ [mainKid]: newer!.token!, [secondKid]: rotated!.token! }), new HeadFile(machine()));
  assert.equal((await afterRevocation.current()).issued_at, issuedAt(rotated!.token!));
  assert.deepEqual(asked, [secondKid], 'a revoked key is not asked for a head');
});
