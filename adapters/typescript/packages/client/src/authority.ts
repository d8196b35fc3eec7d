/**
 * Verifying what the authority signed, with Node's own Ed25519: JWS compact, alg `EdDSA`, header
 * `{alg, kid}` only, the key always the caller's pinned one (never named by the token).
 *
 * The checks and their order are those of `crossgate.authority` (Python): shape, header (algorithm
 * first), key, signature, and only then the payload, which must be the canonical JSON of a
 * `crossgate.decision.v1` claims object, bound to the request and the call about to run.
 */

import { createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';

import { canonicalJson, fingerprint, jsonDigest } from './canonical.js';
import { ConfigurationError, SignatureError } from './errors.js';
import type { Decision, DecisionKind } from './model.js';

export const MAX_TOKEN_LENGTH = 64 * 1024;
const PIN_PREFIX = 'ed25519:';
const REVOKED_PREFIX = 'revoked:';
const SEGMENT = /^[A-Za-z0-9_-]*$/;
const DIGEST = /^[0-9a-f]{64}$/;
const PEM_BLOCK = /-----BEGIN ([A-Z ]+)-----[\s\S]*?-----END \1-----/g;

/** What the authority signs for one decision (Python `crossgate.authority.DecisionClaims`). */
export interface DecisionClaims {
  typ: 'crossgate.decision.v1';
  request_id: string;
  tool: string;
  fingerprint: string;
  kind: DecisionKind;
  args_fingerprint: string | null;
  response_digest: string | null;
  message_digest: string | null;
  reviewer: string;
  reviewer_kind: 'reviewer' | 'operator';
  channel: string | null;
  decided_at: string;
  apply_by: string | null;
  policy_version: number | null;
}

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
   * `ed25519:<base64url>`, a bare base64(url) key, a PEM `PUBLIC KEY` block and `revoked:<kid>`.
   */
  static parse(text: string): TrustedKeys {
    if (text.trimStart().startsWith('{')) {
      throw new ConfigurationError('a keyring JSON file is not pin text: pin the key `crossgate keys show` prints');
    }
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
    const differ = differences(claims, expected.decision);
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

const CLAIM_FIELDS = [
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
] as const;
const KIND_BINDING: Record<DecisionKind, keyof DecisionClaims | null> = {
  approve: null,
  edit: 'args_fingerprint',
  respond: 'response_digest',
  reject: 'message_digest',
};

function parseDecisionClaims(payload: string): DecisionClaims {
  let data: unknown;
  try {
    data = JSON.parse(payload);
  } catch {
    throw malformed('its payload is not JSON');
  }
  const typ = data && typeof data === 'object' && !Array.isArray(data) ? (data as { typ?: unknown }).typ : undefined;
  if (typeof typ !== 'string' || !typ.startsWith('crossgate.')) {
    throw new SignatureError(`the token carries no crossgate claims (typ ${JSON.stringify(typ ?? null)})`, 'wrong_type');
  }
  if (typ !== 'crossgate.decision.v1') {
    throw new SignatureError(`the token is a ${typ}, not a crossgate.decision.v1`, 'wrong_type');
  }
  const claims = data as Record<string, unknown>;
  const keys = Object.keys(claims).sort();
  if (keys.join() !== [...CLAIM_FIELDS].join()) throw malformed('crossgate.decision.v1 payload: its fields are not the claims fields');
  const text = (name: string, nullable = false) => {
    const value = claims[name];
    if ((nullable && value === null) || (typeof value === 'string' && value.length > 0)) return;
    throw malformed(`crossgate.decision.v1 payload: ${name} is not ${nullable ? 'text or null' : 'text'}`);
  };
  const digest = (name: string, nullable: boolean) => {
    const value = claims[name];
    if ((nullable && value === null) || (typeof value === 'string' && DIGEST.test(value))) return;
    throw malformed(`crossgate.decision.v1 payload: ${name} is not a sha256 digest`);
  };
  text('request_id');
  text('tool');
  digest('fingerprint', false);
  if (!['approve', 'edit', 'reject', 'respond'].includes(claims.kind as string)) throw malformed('crossgate.decision.v1 payload: unknown kind');
  for (const name of ['args_fingerprint', 'response_digest', 'message_digest']) digest(name, true);
  text('reviewer');
  if (claims.reviewer_kind !== 'reviewer' && claims.reviewer_kind !== 'operator') throw malformed('crossgate.decision.v1 payload: unknown reviewer_kind');
  text('channel', true);
  for (const name of ['decided_at', 'apply_by']) {
    text(name, name === 'apply_by');
    if (typeof claims[name] === 'string' && Number.isNaN(Date.parse(claims[name] as string))) {
      throw malformed(`crossgate.decision.v1 payload: ${name} is not a time`);
    }
  }
  const version = claims.policy_version;
  if (version !== null && !(Number.isInteger(version) && (version as number) >= 1)) {
    throw malformed('crossgate.decision.v1 payload: policy_version is not a positive integer');
  }
  const kind = claims.kind as DecisionKind;
  for (const [other, field] of Object.entries(KIND_BINDING)) {
    if (field !== null && (claims[field] !== null) !== (other === kind)) {
      throw malformed(`crossgate.decision.v1 payload: ${field} is set exactly for ${other} decisions`);
    }
  }
  if (canonicalJson(claims) !== payload) throw malformed('its payload is not canonical JSON');
  return claims as unknown as DecisionClaims;
}

function differences(claims: DecisionClaims, decision: Decision): string[] {
  const found = decision.kind === claims.kind ? [] : ['kind'];
  if (decision.fingerprint != null && decision.fingerprint !== claims.fingerprint) found.push('fingerprint');
  if (decision.reviewer != null && decision.reviewer !== claims.reviewer) found.push('reviewer');
  if (decision.kind === 'edit' && fingerprint(claims.tool, decision.args) !== claims.args_fingerprint) found.push('edited arguments');
  if (decision.kind === 'reject' && jsonDigest(decision.message) !== claims.message_digest) found.push('message');
  if (decision.kind === 'respond' && jsonDigest(decision.content) !== claims.response_digest) found.push('response');
  return found;
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

function malformed(problem: string): SignatureError {
  return new SignatureError(`malformed token: ${problem}`, 'malformed');
}

function binding(message: string): SignatureError {
  return new SignatureError(message, 'binding');
}
