/**
 * What the authority signs, as `crossgate.authority.claims` (Python) writes it: the payload of a token
 * is the canonical JSON of one claims object whose `typ` names its kind, so a signature over one kind
 * is never read as another. Each parser checks the exact fields of its kind and their types, and that
 * the payload is canonical, before anything is compared with what the server says.
 */

import { canonicalJson } from './canonical.js';
import { filterBytes } from './consumed.js';
import { SignatureError } from './errors.js';
import type { DecisionKind, RememberMatch, RememberScope } from './model.js';

export const DECISION_TYP = 'crossgate.decision.v1';
export const STANDING_RULE_TYP = 'crossgate.standing_rule.v1';
export const STATE_HEAD_TYP = 'crossgate.state_head.v1';

/** What the authority signs for one decision (Python `DecisionClaims`). */
export interface DecisionClaims {
  typ: typeof DECISION_TYP;
  request_id: string;
  tool: string;
  /** Of the call as proposed: the call the reviewer saw. */
  fingerprint: string;
  kind: DecisionKind;
  /** Edit only: the fingerprint of the same tool with the edited arguments. */
  args_fingerprint: string | null;
  response_digest: string | null;
  message_digest: string | null;
  reviewer: string;
  reviewer_kind: 'reviewer' | 'operator';
  channel: string | null;
  decided_at: string;
  /** An approve or edit not applied by then has lapsed. */
  apply_by: string | null;
  policy_version: number | null;
  /** Different reviewers who had to approve when this was signed; the gate holds the request to it. */
  approvals_required: number;
}

/** What the authority signs for one standing rule (Python `StandingRuleClaims`): revocation is not in it. */
export interface StandingRuleClaims {
  typ: typeof STANDING_RULE_TYP;
  rule_id: string;
  verdict: 'allow' | 'deny';
  match: {
    tool: string;
    match: RememberMatch;
    arg_patterns: Record<string, string>;
    args_fingerprint: string | null;
    agent: string | null;
    framework: string | null;
  };
  scope: { scope: RememberScope; run: string | null; session: string | null };
  message: string | null;
  expires_at: string | null;
  created_by: string | null;
  created_at: string;
  source_request: string | null;
}

/**
 * The newest state the authority vouches for, until `expires_at` (Python `StateHeadClaims`): a gate
 * refuses a policy older than the head's, a standing rule it names revoked, an approval it names consumed,
 * and everything once the newest head it has is past `expires_at`.
 */
export interface StateHeadClaims {
  typ: typeof STATE_HEAD_TYP;
  issued_at: string;
  expires_at: string;
  /** The store's current signed policy version; null while none is stored. */
  policy_version: number | null;
  policy_digest: string | null;
  rules_version: number;
  /** Ids of revoked standing rules that would still stand otherwise, sorted. */
  revoked_rules: string[];
  audit_seq: number;
  audit_hash: string;
  /** The Bloom filter (`consumed.ts`, base64url) of the request ids of approvals applied that could still apply. */
  consumed: string;
  consumed_count: number;
  consumed_until: string | null;
  /** Ids of the stored reviewer and agent credentials revoked or rotated away, sorted (checked by servers). */
  revoked_credentials: string[];
}

const DIGEST = /^[0-9a-f]{64}$/;
const KIND_BINDING: Record<DecisionKind, keyof DecisionClaims | null> = {
  approve: null,
  edit: 'args_fingerprint',
  respond: 'response_digest',
  reject: 'message_digest',
};

type Fields = Record<string, unknown>;

/** The claims of a decision in a verified token's payload text; SignatureError for anything else. */
export function parseDecisionClaims(payload: string): DecisionClaims {
  const claims = claimsOf(payload, DECISION_TYP);
  const check = new Checker(claims, DECISION_TYP);
  check.exactly([
    'approvals_required',
    'apply_by',
    'args_fingerprint',
    'channel',
    'decided_at',
    'fingerprint',
    'kind',
    'message_digest',
    'policy_version',
    'request_id',
    'response_digest',
    'reviewer',
    'reviewer_kind',
    'tool',
    'typ',
  ]);
  check.text('request_id');
  check.text('tool');
  check.digest('fingerprint');
  check.oneOf('kind', ['approve', 'edit', 'reject', 'respond']);
  for (const name of ['args_fingerprint', 'response_digest', 'message_digest']) check.digest(name, true);
  check.text('reviewer');
  check.oneOf('reviewer_kind', ['reviewer', 'operator']);
  check.text('channel', true, true);
  check.time('decided_at');
  check.time('apply_by', true);
  check.positive('policy_version', true);
  check.positive('approvals_required');
  const kind = claims.kind as DecisionKind;
  for (const [other, field] of Object.entries(KIND_BINDING)) {
    if (field !== null && (claims[field] !== null) !== (other === kind)) {
      throw malformed(`${DECISION_TYP} payload: ${field} is set exactly for ${other} decisions`);
    }
  }
  canonical(claims, payload);
  return claims as unknown as DecisionClaims;
}

/** The claims of a standing rule in a verified token's payload text; SignatureError for anything else. */
export function parseStandingRuleClaims(payload: string): StandingRuleClaims {
  const claims = claimsOf(payload, STANDING_RULE_TYP);
  const check = new Checker(claims, STANDING_RULE_TYP);
  check.exactly(['created_at', 'created_by', 'expires_at', 'match', 'message', 'rule_id', 'scope', 'source_request', 'typ', 'verdict']);
  check.text('rule_id');
  check.oneOf('verdict', ['allow', 'deny']);
  check.text('message', true, true);
  check.time('expires_at', true);
  check.text('created_by', true, true);
  check.time('created_at');
  check.text('source_request', true, true);
  const match = check.object('match');
  match.exactly(['agent', 'arg_patterns', 'args_fingerprint', 'framework', 'match', 'tool']);
  match.text('tool', false, true);
  match.oneOf('match', ['tool', 'pattern', 'exact']);
  match.text('args_fingerprint', true, true);
  match.text('agent', true, true);
  match.text('framework', true, true);
  const patterns = match.object('arg_patterns');
  for (const name of Object.keys(patterns.fields)) patterns.text(name, false, true);
  const scope = check.object('scope');
  scope.exactly(['run', 'scope', 'session']);
  scope.oneOf('scope', ['once', 'run', 'session', 'forever']);
  scope.text('run', true, true);
  scope.text('session', true, true);
  canonical(claims, payload);
  return claims as unknown as StandingRuleClaims;
}

/** The claims of a state head in a verified token's payload text; SignatureError for anything else. */
export function parseStateHeadClaims(payload: string): StateHeadClaims {
  const claims = claimsOf(payload, STATE_HEAD_TYP);
  const check = new Checker(claims, STATE_HEAD_TYP);
  check.exactly([
    'audit_hash',
    'audit_seq',
    'consumed',
    'consumed_count',
    'consumed_until',
    'expires_at',
    'issued_at',
    'policy_digest',
    'policy_version',
    'revoked_credentials',
    'revoked_rules',
    'rules_version',
    'typ',
  ]);
  check.time('issued_at');
  check.time('expires_at');
  check.positive('policy_version', true);
  check.digest('policy_digest', true);
  check.count('rules_version');
  check.texts('revoked_rules');
  check.texts('revoked_credentials');
  check.count('audit_seq');
  check.digest('audit_hash');
  check.text('consumed', false, true);
  check.count('consumed_count');
  check.time('consumed_until', true);
  if ((claims.policy_version === null) !== (claims.policy_digest === null)) {
    throw malformed(`${STATE_HEAD_TYP} payload: policy_version and policy_digest are set together`);
  }
  if (Date.parse(claims.expires_at as string) <= Date.parse(claims.issued_at as string)) {
    throw malformed(`${STATE_HEAD_TYP} payload: expires_at is not after issued_at`);
  }
  try {
    filterBytes(claims.consumed as string);
  } catch (error) {
    throw malformed(`${STATE_HEAD_TYP} payload: consumed: ${(error as Error).message}`);
  }
  canonical(claims, payload);
  return claims as unknown as StateHeadClaims;
}

function claimsOf(payload: string, typ: string): Fields {
  let data: unknown;
  try {
    data = JSON.parse(payload);
  } catch {
    throw malformed('its payload is not JSON');
  }
  const found = isFields(data) ? data.typ : undefined;
  if (typeof found !== 'string' || !found.startsWith('crossgate.')) {
    throw new SignatureError(`the token carries no crossgate claims (typ ${JSON.stringify(found ?? null)})`, 'wrong_type');
  }
  if (found !== typ) throw new SignatureError(`the token is a ${found}, not a ${typ}`, 'wrong_type');
  return data as Fields;
}

function canonical(claims: Fields, payload: string): void {
  if (canonicalJson(claims) !== payload) throw malformed('its payload is not canonical JSON');
}

/** Field checks of one claims object (or a nested part of one), each a one-line SignatureError. */
class Checker {
  constructor(
    readonly fields: Fields,
    readonly where: string,
  ) {}

  exactly(names: string[]): void {
    if (Object.keys(this.fields).sort().join() !== [...names].sort().join()) {
      throw malformed(`${this.where} payload: its fields are not the claims fields`);
    }
  }

  text(name: string, nullable = false, emptyOk = false): void {
    const value = this.fields[name];
    if ((nullable && value === null) || (typeof value === 'string' && (emptyOk || value.length > 0))) return;
    this.fail(name, nullable ? 'text or null' : 'text');
  }

  digest(name: string, nullable = false): void {
    const value = this.fields[name];
    if ((nullable && value === null) || (typeof value === 'string' && DIGEST.test(value))) return;
    this.fail(name, 'a sha256 digest');
  }

  oneOf(name: string, values: string[]): void {
    if (!values.includes(this.fields[name] as string)) this.fail(name, `one of ${values.join(', ')}`);
  }

  time(name: string, nullable = false): void {
    const value = this.fields[name];
    if (nullable && value === null) return;
    if (typeof value !== 'string' || Number.isNaN(Date.parse(value))) this.fail(name, 'a time');
  }

  positive(name: string, nullable = false): void {
    const value = this.fields[name];
    if ((nullable && value === null) || (Number.isInteger(value) && (value as number) >= 1)) return;
    this.fail(name, 'a positive integer');
  }

  count(name: string): void {
    const value = this.fields[name];
    if (!Number.isInteger(value) || (value as number) < 0) this.fail(name, 'a count');
  }

  texts(name: string): void {
    const value = this.fields[name];
    if (!Array.isArray(value) || !value.every((item) => typeof item === 'string')) this.fail(name, 'a list of text');
  }

  object(name: string): Checker {
    const value = this.fields[name];
    if (!isFields(value)) this.fail(name, 'an object');
    return new Checker(value as Fields, `${this.where} ${name}`);
  }

  private fail(name: string, what: string): never {
    throw malformed(`${this.where} payload: ${name} is not ${what}`);
  }
}

function isFields(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function malformed(problem: string): SignatureError {
  return new SignatureError(`malformed token: ${problem}`, 'malformed');
}
