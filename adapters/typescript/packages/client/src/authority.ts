/**
 * Verifying what the authority signed, with Node's own Ed25519: JWS compact, alg `EdDSA`, header
 * `{alg, kid}` only, the key always the caller's pinned one (never named by the token).
 *
 * The checks and their order are those of `crossgate.authority` (Python): shape, header (algorithm
 * first), key, signature, and only then the payload, which must be the canonical JSON of a
 * claims object of the kind expected (`claims.ts`), bound to what is about to run: a decision to its request
 * and call, a standing rule to the rule as the server reports it.
 */

import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';

import { canonicalJson, fingerprint, jsonDigest } from './canonical.js';
import {
  type DecisionClaims,
  malformed,
  parseDecisionClaims,
  parseStandingRuleClaims,
  parseStateHeadClaims,
  type StandingRuleClaims,
  type StateHeadClaims,
} from './claims.js';
import { ConfigurationError, SignatureError } from './errors.js';
import type { Decision, StandingRule } from './model.js';

export const MAX_TOKEN_LENGTH = 64 * 1024;
const PIN_PREFIX = 'ed25519:';
const REVOKED_PREFIX = 'revoked:';
const KEYRING_FORMAT = 'crossgate-keyring/1';
const SEGMENT = /^[A-Za-z0-9_-]*$/;
const PEM_BLOCK = /-----BEGIN ([A-Z ]+)-----[\s\S]*?-----END \1-----/g;

/** One pinned Ed25519 public key and its kid (the RFC 7638 JWK thumbprint). */
export class PublicKey {
  readonly kid: string;
  readonly key: KeyObject;

  constructor(readonly raw: Buffer) {
    if (raw.length !== 32) throw new ConfigurationError('an Ed25519 public key is 32 bytes');
    const x = raw.toString('base64url');
    this.key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x }, format: 'jwk' });
    const jwk = canonicalJson({ crv: 'Ed25519', kty: 'OKP', x });
    this.kid = createHash('sha256').update(jwk, 'ascii').digest('base64url');
  }

  /** A key from `ed25519:<base64url>` (what `crossgate keys show` prints), bare base64(url), or a PEM block. */
  static parse(text: string): PublicKey {
    const trimmed = text.trim();
    if (trimmed.startsWith('-----BEGIN')) {
      let key: KeyObject;
      try {
        key = createPublicKey({ key: trimmed, format: 'pem' });
      } catch {
        throw new ConfigurationError('the PEM block is not a public key');
      }
      if (key.asymmetricKeyType !== 'ed25519') throw new ConfigurationError('the PEM public key is not an Ed25519 key');
      const x = key.export({ format: 'jwk' }).x;
      return new PublicKey(Buffer.from(x ?? '', 'base64url'));
    }
    const body = trimmed.startsWith(PIN_PREFIX) ? trimmed.slice(PIN_PREFIX.length) : trimmed;
    const raw = /^[A-Za-z0-9_+/-]+=*$/.test(body) ? Buffer.from(body.replace(/\+/g, '-').replace(/\//g, '_'), 'base64url') : null;
    if (raw === null || raw.length !== 32) {
      const shown = trimmed.length <= 24 ? trimmed : `${trimmed.slice(0, 20)}…`;
      throw new ConfigurationError(`not an Ed25519 public key: '${shown}' (expected ${PIN_PREFIX}<base64url>)`);
    }
    return new PublicKey(raw);
  }

  get pin(): string {
    return PIN_PREFIX + this.raw.toString('base64url');
  }
}

/** Pinned public keys by kid, and revoked kids. Built from the agent's own configuration, never the server's. */
export class TrustedKeys {
  readonly #keys: Map<string, PublicKey>;
  readonly revoked: ReadonlySet<string>;

  constructor(keys: Iterable<PublicKey>, revoked: Iterable<string> = []) {
    this.#keys = new Map([...keys].map((k) => [k.kid, k]));
    this.revoked = new Set(revoked);
    if (this.#keys.size === 0) throw new ConfigurationError('no authority public key to trust');
  }

  /**
   * Keys from pin text: any mix, separated by whitespace, commas or lines, with `#` comments, of
   * `ed25519:<base64url>`, a bare base64(url) key, a PEM `PUBLIC KEY` block and `revoked:<kid>`; or a
   * keyring JSON document (`keyring.json`, `crossgate-keyring/1`: every key, its revoked kids refused).
   */
  static parse(text: string): TrustedKeys {
    if (text.trimStart().startsWith('{')) return fromKeyring(text);
    const keys: PublicKey[] = [];
    for (const block of text.matchAll(PEM_BLOCK)) {
      if (block[1] !== 'PUBLIC KEY') {
        throw new ConfigurationError(`found a PEM ${block[1]}; pin only the public key (crossgate keys show prints it)`);
      }
      keys.push(PublicKey.parse(block[0]));
    }
    const revoked: string[] = [];
    const rest = text.replace(PEM_BLOCK, ' ').replace(/#[^\n]*/g, ' ');
    for (const item of rest.replace(/,/g, ' ').split(/\s+/).filter(Boolean)) {
      if (item.startsWith(REVOKED_PREFIX)) revoked.push(item.slice(REVOKED_PREFIX.length));
      else keys.push(PublicKey.parse(item));
    }
    return new TrustedKeys(keys, revoked);
  }

  get kids(): string[] {
    return [...this.#keys.keys()];
  }

  /** The pinned key named `kid`; SignatureError if it is revoked or not pinned. */
  key(kid: string): KeyObject {
    if (this.revoked.has(kid)) throw new SignatureError(`the token is signed with revoked key ${kid}`, 'revoked_key');
    const key = this.#keys.get(kid);
    if (key === undefined) throw new SignatureError(`the token is signed with key ${kid}, which is not pinned`, 'unknown_key');
    return key.key;
  }
}

function fromKeyring(text: string): TrustedKeys {
  const refuse = (problem: string) => new ConfigurationError(`not a crossgate keyring: ${problem}`);
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw refuse('it is not JSON');
  }
  const file = data as { format?: unknown; keys?: unknown; revoked?: unknown; current?: unknown };
  if (file.format !== KEYRING_FORMAT) throw refuse(`format is not ${KEYRING_FORMAT}`);
  if (!Array.isArray(file.keys) || file.keys.length === 0) throw refuse('keys is not a list of keys');
  const keys = file.keys.map((entry: { kid?: unknown; public_key?: unknown }) => {
    const key = PublicKey.parse(typeof entry?.public_key === 'string' ? entry.public_key : '');
    if (key.kid !== entry.kid) throw refuse(`entry ${String(entry?.kid)} holds a key whose kid is ${key.kid}`);
    return key;
  });
  const revoked = Array.isArray(file.revoked) ? file.revoked.map((entry: { kid?: unknown }) => String(entry?.kid)) : [];
  if (!keys.some((k) => k.kid === file.current) || revoked.includes(String(file.current))) throw refuse('its current key is not a live key');
  return new TrustedKeys(keys, revoked);
}

/** The payload text of `token` once its signature checks out with the pinned key its kid names. */
export function verifyToken(token: string, trusted: TrustedKeys): string {
  if (typeof token !== 'string' || !token) throw malformed('it is empty');
  if (token.length > MAX_TOKEN_LENGTH) throw malformed(`it is longer than ${MAX_TOKEN_LENGTH} characters`);
  const parts = token.split('.');
  if (parts.length !== 3) throw malformed("it is not three base64url segments joined by '.' (JWS compact)");
  const [headerPart = '', payloadPart = '', signaturePart = ''] = parts;
  if (!SEGMENT.test(payloadPart)) throw malformed('its payload is not base64url');
  const key = trusted.key(kidOf(headerPart));
  const signature = b64decode(signaturePart, 'signature');
  if (signature.length !== 64) throw new SignatureError("the token's signature is not an Ed25519 signature", 'bad_signature');
  if (!verify(null, Buffer.from(`${headerPart}.${payloadPart}`, 'ascii'), key, signature)) {
    throw new SignatureError("the token's signature does not verify with the pinned key", 'bad_signature');
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(b64decode(payloadPart, 'payload'));
  } catch (error) {
    if (error instanceof SignatureError) throw error;
    throw malformed('its payload is not UTF-8');
  }
}

export interface ExpectedDecision {
  requestId: string;
  /** The fingerprint of the call as proposed (the request's). */
  fingerprint: string;
  /** The decision as the server reports it: its kind, reviewer and content must be what was signed. */
  decision?: Decision;
  /** With a time, an approve or edit past its `apply_by` is refused as lapsed. */
  now?: Date;
}

/**
 * The claims of a decision signed for request `expected.requestId` on the call with
 * `expected.fingerprint`; SignatureError (one line, with a `reason`) for anything else.
 */
export function verifyDecision(token: string, trusted: TrustedKeys, expected: ExpectedDecision): DecisionClaims {
  const claims = parseDecisionClaims(verifyToken(token, trusted));
  if (claims.request_id !== expected.requestId) {
    throw binding(`the decision was signed for request ${claims.request_id}, not ${expected.requestId}`);
  }
  if (claims.fingerprint !== expected.fingerprint) {
    throw binding(
      `the decision was signed for call ${claims.fingerprint.slice(0, 12)}…, not ${expected.fingerprint.slice(0, 12)}… ` +
        `(request ${expected.requestId})`,
    );
  }
  if (expected.decision !== undefined) {
    const differ = decisionDifferences(claims, expected.decision);
    if (differ.length) {
      throw binding(`the decision on request ${expected.requestId} differs from the signed one: ${differ.join(', ')}`);
    }
  }
  if (expected.now !== undefined && claims.apply_by !== null && expected.now.getTime() > Date.parse(claims.apply_by)) {
    throw new SignatureError(
      `the approval of request ${expected.requestId} lapsed at ${claims.apply_by} before it was applied`,
      'lapsed',
    );
  }
  return claims;
}

export interface ExpectedApprovals {
  requestId: string;
  fingerprint: string;
  /** The approvals the request needs as the server reports it; the count each approval was signed under binds too. */
  required: number;
  now?: Date;
}

/**
 * `expected.required` signed approvals of one request by different reviewers (Python
 * `TrustedKeys.verify_approvals`): each token an approve for this request and call; an edit, reject or
 * respond among them is refused, and so are fewer different reviewers than the most any approval was signed for.
 */
export function verifyApprovals(tokens: readonly string[], trusted: TrustedKeys, expected: ExpectedApprovals): DecisionClaims[] {
  const { requestId, fingerprint: fp, now } = expected;
  const approvals = tokens.map((token) => verifyDecision(token, trusted, { requestId, fingerprint: fp, ...(now ? { now } : {}) }));
  for (const claims of approvals) {
    if (claims.kind !== 'approve') throw binding(`request ${requestId} has a signed ${claims.kind} by ${claims.reviewer}, not an approval`);
  }
  const required = Math.max(expected.required, ...approvals.map((c) => c.approvals_required));
  const reviewers = new Set(approvals.map((c) => c.reviewer));
  if (reviewers.size < required) {
    throw binding(`request ${requestId} needs signed approvals by ${required} different reviewers, has ${reviewers.size}`);
  }
  return approvals;
}

/** A standing rule's signature, and that `rule` as the server reports it is exactly the rule signed. */
export function verifyStandingRule(token: string, trusted: TrustedKeys, rule: StandingRule): StandingRuleClaims {
  const claims = parseStandingRuleClaims(verifyToken(token, trusted));
  const differ = ruleDifferences(claims, rule);
  if (differ.length) throw binding(`standing rule ${rule.id} differs from the rule signed as ${claims.rule_id}: ${differ.join(', ')}`);
  return claims;
}

/** A state head's claims once its signature checks out with a pinned key; SignatureError otherwise. */
export function verifyStateHead(token: string, trusted: TrustedKeys): StateHeadClaims {
  return parseStateHeadClaims(verifyToken(token, trusted));
}

function ruleDifferences(claims: StandingRuleClaims, rule: StandingRule): string[] {
  const pairs: [string, unknown, unknown][] = [
    ['rule_id', claims.rule_id, rule.id],
    ['verdict', claims.verdict, rule.effect],
    ['match.tool', claims.match.tool, rule.tool],
    ['match.match', claims.match.match, rule.match],
    ['match.arg_patterns', canonicalJson(claims.match.arg_patterns), canonicalJson(rule.arg_patterns ?? {})],
    ['match.args_fingerprint', claims.match.args_fingerprint, rule.args_fingerprint ?? null],
    ['match.agent', claims.match.agent, rule.agent ?? null],
    ['match.framework', claims.match.framework, rule.framework ?? null],
    ['scope.scope', claims.scope.scope, rule.scope],
    ['scope.run', claims.scope.run, rule.run ?? null],
    ['scope.session', claims.scope.session, rule.session ?? null],
    ['message', claims.message, rule.message ?? null],
    ['created_by', claims.created_by, rule.created_by ?? null],
    ['source_request', claims.source_request, rule.source_request ?? null],
  ];
  const found = pairs.filter(([, signed, stored]) => signed !== stored).map(([name]) => name);
  if (!sameInstant(claims.expires_at, rule.expires_at ?? null)) found.push('expires_at');
  if (!sameInstant(claims.created_at, rule.created_at)) found.push('created_at');
  return found;
}

const TIME = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$/;

/** True when two ISO 8601 times (or two nulls) are the same moment, to the microsecond Python keeps. */
export function sameInstant(a: string | null, b: string | null): boolean {
  if (a === null || b === null) return a === b;
  const [x, y] = [instant(a), instant(b)];
  return x !== null && x === y;
}

/** An ISO 8601 time as microseconds since the epoch (the precision Python keeps); null if it is not one. */
export function instant(text: string): bigint | null {
  const parts = TIME.exec(text);
  if (parts === null) return null;
  const seconds = Date.parse(`${parts[1]}${parts[3] === 'Z' ? 'Z' : parts[3]}`);
  if (Number.isNaN(seconds)) return null;
  return BigInt(seconds) * 1000n + BigInt((parts[2] ?? '').padEnd(9, '0').slice(0, 6));
}

/** Names of what `decision` (as the server reports it) says otherwise than the signed `claims`; empty if nothing. */
export function decisionDifferences(claims: DecisionClaims, decision: Decision): string[] {
  const found = decision.kind === claims.kind ? [] : ['kind'];
  if (decision.fingerprint != null && decision.fingerprint !== claims.fingerprint) found.push('fingerprint');
  if (decision.reviewer != null && decision.reviewer !== claims.reviewer) found.push('reviewer');
  if (decision.kind === 'edit' && fingerprint(claims.tool, decision.args) !== claims.args_fingerprint) found.push('edited arguments');
  if (decision.kind === 'reject' && jsonDigest(decision.message) !== claims.message_digest) found.push('message');
  if (decision.kind === 'respond' && jsonDigest(decision.content) !== claims.response_digest) found.push('response');
  return found;
}

/** The kid a token's header names (unverified: the signature is checked by the functions above). */
export function tokenKid(token: string): string {
  return kidOf(token.split('.', 1)[0] ?? '');
}

function kidOf(segment: string): string {
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(b64decode(segment, 'header')));
  } catch (error) {
    if (error instanceof SignatureError) throw error;
    throw malformed('its header is not JSON');
  }
  if (!header || typeof header !== 'object' || Array.isArray(header)) throw malformed('its header is not a JSON object');
  const { alg, kid, ...extra } = header as Record<string, unknown>;
  if (alg !== 'EdDSA') {
    throw new SignatureError(`the token uses algorithm ${JSON.stringify(alg ?? null)}; only EdDSA (Ed25519) is accepted`, 'algorithm');
  }
  const names = Object.keys(extra).sort();
  if (names.length) throw malformed(`its header has fields crossgate does not accept: ${names.join(', ')}`);
  if (typeof kid !== 'string' || !kid) throw new SignatureError('the token names no key (kid)', 'unknown_key');
  return kid;
}

/** One base64url segment; padding, other alphabets and non-canonical trailing bits are refused. */
function b64decode(segment: string, what: string): Buffer {
  if (!SEGMENT.test(segment)) throw malformed(`its ${what} is not base64url`);
  const data = Buffer.from(segment, 'base64url');
  if (data.toString('base64url') !== segment) throw malformed(`its ${what} is not canonical base64url`);
  return data;
}

function binding(message: string): SignatureError {
  return new SignatureError(message, 'binding');
}
