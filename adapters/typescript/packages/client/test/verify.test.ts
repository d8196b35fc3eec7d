import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';

import {
  AgentClient,
  checkDecision,
  ConfigurationError,
  fingerprint,
  globMatch,
  pinnedKeys,
  PUBKEY_ENV,
  PUBKEY_FILE_ENV,
  SignatureError,
  standingRuleMatches,
  TrustedKeys,
  UNVERIFIED,
  verifiedClient,
  verifyApprovals,
  verifyStandingRule,
  type ApprovalRequest,
  type SignatureReason,
  type StandingRule,
  type ToolCall,
} from '@crossgate/client';
import { pythonOps } from '@crossgate/testing';

const ARGS = { id: 't3' };
const FP = fingerprint('delete_ticket', ARGS);
const REQUEST = 'req_two_0123';
const approval = (reviewer: string, extra: object = {}) => ({
  typ: 'crossgate.decision.v1',
  request_id: REQUEST,
  tool: 'delete_ticket',
  fingerprint: FP,
  kind: 'approve',
  reviewer,
  reviewer_kind: 'reviewer',
  channel: 'api',
  decided_at: '2026-03-01T10:00:00Z',
  approvals_required: 2,
  ...extra,
});
const RULE = {
  id: 'rule_1',
  effect: 'allow',
  tool: 'delete_*',
  match: 'pattern',
  arg_patterns: { id: 't[0-9]', 'meta.tags.0': 'spam*' },
  agent: 'tickets',
  framework: 'ai-sdk',
  scope: 'session',
  session: 'sess-1',
  created_at: '2026-03-01T12:00:00.123456+02:00',
  created_by: 'alice',
  source_request: 'req_src',
  expires_at: '2026-04-01T00:00:00Z',
};

const [key, other, alice, bob, aliceAgain, edit, ruleOut, otherRule] = pythonOps<Record<string, unknown>>([
  { op: 'key', key: 'main' },
  { op: 'key', key: 'other' },
  { op: 'sign', key: 'main', claims: approval('alice') },
  { op: 'sign', key: 'main', claims: approval('bob') },
  { op: 'sign', key: 'main', claims: approval('alice', { decided_at: '2026-03-01T10:01:00Z' }) },
  { op: 'sign', key: 'main', claims: approval('carol', { kind: 'edit', args_fingerprint: fingerprint('delete_ticket', { id: 't1' }) }) },
  { op: 'sign_rule', key: 'main', rule: RULE },
  { op: 'sign_rule', key: 'other', rule: RULE },
]);
const trusted = TrustedKeys.parse(String(key!.pin));
const tokens = (...signed: (Record<string, unknown> | undefined)[]) => signed.map((s) => String(s!.token));
const expected = { requestId: REQUEST, fingerprint: FP, required: 2 };
const signedRule = ruleOut!.rule as StandingRule;

function refused(reason: SignatureReason, run: () => unknown): void {
  assert.throws(run, (error: unknown) => error instanceof SignatureError && error.reason === reason && !error.message.includes('\n'));
}

test('approvals of a request that needs two: two different reviewers verify; one twice, an edit among them, or fewer do not', () => {
  assert.deepEqual(
    verifyApprovals(tokens(alice, bob), trusted, expected).map((c) => c.reviewer),
    ['alice', 'bob'],
  );
  refused('binding', () => verifyApprovals(tokens(alice, aliceAgain), trusted, expected));
  refused('binding', () => verifyApprovals(tokens(alice), trusted, expected));
  refused('binding', () => verifyApprovals(tokens(alice, edit), trusted, expected));
  // The count signed with the approvals binds: a store that lowers approvals_required to 1 changes nothing.
  refused('binding', () => verifyApprovals(tokens(alice), trusted, { ...expected, required: 1 }));
});

test('the check of a decided request: unsigned, too few approvers, or other arguments to run are refused', () => {
  const request = {
    id: REQUEST,
    call: { framework: 'ai-sdk', tool: 'delete_ticket', args: ARGS },
    fingerprint: FP,
    status: 'decided',
    decision: { kind: 'approve', reviewer: 'bob', fingerprint: FP },
    approvals_required: 1,
    signatures: tokens(alice, bob),
  } as unknown as ApprovalRequest;
  const now = new Date();
  assert.equal(checkDecision(request, ARGS, trusted, now).reviewer, 'bob');
  refused('unsigned', () => checkDecision({ ...request, signatures: [] }, ARGS, trusted, now));
  refused('binding', () => checkDecision({ ...request, signatures: tokens(bob) }, ARGS, trusted, now));
  refused('binding', () => checkDecision(request, { id: 't1' }, trusted, now));
  refused('binding', () => checkDecision(request, null, trusted, now));
});

test('a standing rule verifies as the server reports it; any field changed, or another key, is refused', () => {
  const claims = verifyStandingRule(signedRule.signature!, trusted, signedRule);
  assert.equal(claims.rule_id, 'rule_1');
  assert.equal(claims.created_at, '2026-03-01T10:00:00.123456Z', 'Python signs the time in UTC; the rule keeps its offset');
  const widened: Partial<StandingRule>[] = [
    { tool: '*' },
    { effect: 'deny' },
    { match: 'tool' },
    { arg_patterns: { id: '*' } },
    { agent: null },
    { framework: 'mastra' },
    { scope: 'forever' },
    { session: 'sess-2' },
    { expires_at: null },
    { expires_at: '2026-04-01T00:00:00.000001Z' },
    { created_at: '2026-03-01T10:00:00.123457Z' },
    { id: 'rule_2' },
  ];
  for (const change of widened) {
    refused('binding', () => verifyStandingRule(signedRule.signature!, trusted, { ...signedRule, ...change }));
  }
  assert.doesNotThrow(() => verifyStandingRule(signedRule.signature!, trusted, { ...signedRule, created_at: '2026-03-01T10:00:00.123456Z' }));
  refused('unknown_key', () => verifyStandingRule(String(otherRule!.token), trusted, signedRule));
  refused('wrong_type', () => verifyStandingRule(String(alice!.token), trusted, signedRule));
  assert.ok(other);
});

test('globs match as Python fnmatchcase does, for every case of the corpus', () => {
  const cases: [string, string][] = [
    ['delete_*', 'delete_ticket'],
    ['delete_*', 'Delete_ticket'],
    ['*', ''],
    ['a*b*c', 'abxbxc'],
    ['a*b*c', 'abxbx'],
    ['?', 'é'],
    ['?', '🎫'],
    ['??', '🎫'],
    ['t[0-9]', 't7'],
    ['t[0-9]', 'tx'],
    ['t[!0-9]', 'tx'],
    ['t[!0-9]', 't7'],
    ['[]]', ']'],
    ['[!]]', 'a'],
    ['[a-]', '-'],
    ['[z-a]', 'm'],
    ['[!z-a]', 'm'],
    ['[', '['],
    ['a[b', 'a[b'],
    ['*.txt', 'notes.txt\n'],
    ['*', 'line\nbreak'],
    ['a?c', 'a\nc'],
    ['**/x', 'a/b/x'],
    ['x*y*z*', 'xyz'],
    ['*a*a*a*a*a*b', 'a'.repeat(200)],
  ];
  const [python] = pythonOps<{ matches: boolean[] }>([{ op: 'glob', cases }]);
  assert.deepEqual(
    cases.map(([pattern, text]) => globMatch(pattern, text)),
    python!.matches,
  );
});

test('which calls a standing rule covers is what Python decides: tool, arguments, agent, framework, session, expiry', () => {
  const call = (change: Partial<ToolCall> & { tags?: string[] } = {}): ToolCall => {
    const { tags = ['spam-1'], ...rest } = change;
    return { framework: 'ai-sdk', tool: 'delete_ticket', args: { id: 't3', meta: { tags } }, run: 'run-1', session: 'sess-1', agent: 'tickets', ...rest };
  };
  const calls: ToolCall[] = [
    call(),
    call({ tool: 'delete_user' }),
    call({ tool: 'remove_ticket' }),
    call({ args: { id: 't33', meta: { tags: ['spam'] } } }),
    call({ tags: ['ham'] }),
    call({ args: { id: 't3' } }),
    call({ args: { id: 't3', 'meta.tags.0': 'spam', meta: {} } }),
    call({ agent: 'other' }),
    call({ agent: null }),
    call({ framework: 'mastra' }),
    call({ session: 'sess-2' }),
    call({ session: null, run: 'sess-1' }),
  ];
  const rules: StandingRule[] = [
    signedRule,
    { ...signedRule, match: 'exact', args_fingerprint: fingerprint('delete_ticket', { id: 't3', meta: { tags: ['spam-1'] } }) },
    { ...signedRule, match: 'tool', scope: 'run', run: 'run-1', agent: null, framework: null },
    { ...signedRule, match: 'tool', scope: 'forever', expires_at: '2026-03-01T00:00:00Z' },
  ];
  const now = '2026-03-15T00:00:00+00:00';
  const python = pythonOps<{ matches: boolean[] }>(rules.map((rule) => ({ op: 'rule_matches', rule, calls, now })));
  for (const [i, rule] of rules.entries()) {
    assert.deepEqual(
      calls.map((c) => standingRuleMatches(rule, c, new Date(now))),
      python[i]!.matches,
      `rule ${i}`,
    );
  }
  assert.ok(python[0]!.matches.includes(true) && python[0]!.matches.includes(false), 'the corpus has both answers');
});

test('a keyring JSON file pins every key it holds, its revoked kids refused', () => {
  const [made] = pythonOps<{ keyring: string; kids: string[]; revoked: string }>([{ op: 'keyring_json' }]);
  const keys = TrustedKeys.parse(made!.keyring);
  assert.deepEqual(keys.kids.sort(), [...made!.kids].sort());
  assert.ok(keys.revoked.has(made!.revoked));
  for (const text of ['{"format": "crossgate-keyring/1", "keys": []}', '{"format": "other"}', '{']) {
    assert.throws(() => TrustedKeys.parse(text), (error: unknown) => error instanceof Error && !error.message.includes('\n'));
  }
});

test('the pinned keys: the option, else the environment (pin text or a file); both set, or a missing file, is refused', () => {
  const pin = String(key!.pin);
  const dir = mkdtempSync(join(tmpdir(), 'crossgate-pins-'));
  const file = join(dir, 'authority.pub');
  writeFileSync(file, `# the authority\n${pin}\n`);
  const kid = String(key!.kid);
  assert.deepEqual(pinnedKeys(pin, {})?.kids, [kid]);
  assert.deepEqual(pinnedKeys(file, {})?.kids, [kid], 'a path to a pin file');
  assert.deepEqual(pinnedKeys(undefined, { [PUBKEY_ENV]: pin })?.kids, [kid]);
  assert.deepEqual(pinnedKeys(undefined, { [PUBKEY_FILE_ENV]: file })?.kids, [kid]);
  assert.equal(pinnedKeys(undefined, {}), null);
  const oneLine = (error: unknown) => error instanceof ConfigurationError && !error.message.includes('\n');
  assert.throws(() => pinnedKeys(undefined, { [PUBKEY_ENV]: pin, [PUBKEY_FILE_ENV]: file }), oneLine);
  assert.throws(() => pinnedKeys(join(dir, 'missing.pub'), {}), (e: unknown) => oneLine(e) && /no authority public key file/.test(String(e)));
  assert.throws(() => pinnedKeys(undefined, { [PUBKEY_FILE_ENV]: join(dir, 'missing.pub') }), oneLine);
});

test('a gate client without pinned keys verifies nothing and says so, once per process', async () => {
  const warnings: string[] = [];
  const listen = (warning: Error) => warnings.push(warning.message);
  process.on('warning', listen);
  const saved = [process.env[PUBKEY_ENV], process.env[PUBKEY_FILE_ENV]];
  delete process.env[PUBKEY_ENV];
  delete process.env[PUBKEY_FILE_ENV];
  try {
    const client = new AgentClient({ baseUrl: 'http://127.0.0.1:9', token: 'x' });
    assert.equal(verifiedClient(client).verified, false);
    assert.equal(verifiedClient(client).verified, false);
    assert.equal(verifiedClient(client, String(key!.pin)).verified, true);
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('warning', listen);
    if (saved[0] !== undefined) process.env[PUBKEY_ENV] = saved[0];
    if (saved[1] !== undefined) process.env[PUBKEY_FILE_ENV] = saved[1];
  }
  assert.deepEqual(warnings, [UNVERIFIED]);
});
