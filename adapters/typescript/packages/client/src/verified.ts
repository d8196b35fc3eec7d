/**
 * The authority check where the tool runs (Python `crossgate.adapter` `VerifiedQueue`): decisions and
 * standing rules verified with keys pinned in this process, never with the server's word for it.
 *
 * A gate's client is a `VerifiedClient`. Before a reviewed call runs (`markApplied`, the step of
 * `applyDecision` before anything runs) it verifies the request's signatures: by a pinned, unrevoked
 * key, for this request and call, the decision as the server reports it, the arguments about to run
 * the ones signed, enough different approvers, not past the signed `apply_by`. Before a call a standing
 * rule allowed runs (`evaluate`, `submit`, `prepare`) it verifies the rule's signature and that the rule
 * covers the call. What does not verify does not run: the server closes the request with the refusal the
 * model reads, and a refused rule's call gets a deny verdict, both recorded with `POST /refusals`.
 *
 * With keys pinned it also holds the server's signed state head (`heads.ts`): a call the policy or a rule
 * allows, and a reviewed call about to run, are refused while the newest head is stale, when the server
 * evaluates a policy older than the head's, when the head names the allowing rule revoked, or the approval
 * consumed; recorded and read by the model as the signature refusals are.
 *
 * The keys come from the gate's own configuration: `authority` (TrustedKeys, a PublicKey, pin text or a
 * pin file's path), else `$CROSSGATE_AUTHORITY_PUBKEY` or `$CROSSGATE_AUTHORITY_PUBKEY_FILE`. Without
 * any, the gate runs unverified, as before signatures, and warns once per process.
 */

import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';

import { decisionDifferences, PublicKey, TrustedKeys, verifyApprovals, verifyDecision, verifyStandingRule } from './authority.js';
import { canonicalJson, fingerprint, jsonDigest } from './canonical.js';
import type { DecisionClaims, StateHeadClaims } from './claims.js';
import { AgentClient, type SubmitOptions } from './client.js';
import { ConfigurationError, ConflictError, SignatureError } from './errors.js';
import { defaultHeadFile, HeadFile, HeadGuard } from './heads.js';
import { APPROVAL_LAPSED, CONSUMED, DECISION_REFUSED, REVOKED_RULE, ROLLED_BACK, RULE_REFUSED, STALE } from './messages.js';
import {
  type ApprovalRequest,
  type JsonObject,
  type PolicyDocument,
  type StandingRule,
  type Submission,
  type ToolCall,
  type Verdict,
} from './model.js';
import { standingRuleMatches } from './rules.js';

export const PUBKEY_ENV = 'CROSSGATE_AUTHORITY_PUBKEY';
export const PUBKEY_FILE_ENV = 'CROSSGATE_AUTHORITY_PUBKEY_FILE';
/** Verified standing rules a client remembers (a rule verifies once, not on every call it allows). */
const RULE_CACHE_SIZE = 1024;
/** The rule a deny verdict names when the state head refused the call (Python `HEAD_RULE`). */
export const HEAD_RULE = 'crossgate-state-head';
/** Refusal reasons of the state head check, beside the signature's (Python `HEAD_REASONS`). */
export const HEAD_REASONS: ReadonlySet<string> = new Set(['stale_head', 'rolled_back', 'consumed', 'revoked_rule']);

/** What a gate's `authority` option takes: keys, one key, pin text, or the path of a pin file. */
export type AuthorityPin = TrustedKeys | PublicKey | string;

export const UNVERIFIED =
  `crossgate: no authority public key is pinned (authority option, $${PUBKEY_ENV} or $${PUBKEY_FILE_ENV}), so ` +
  'decisions and standing rules are not verified where tools run: any writer of the store can let a call run.';

let warned = false;

/** The keys a gate verifies with: `authority`, else the environment's; null when nothing is pinned. */
export function pinnedKeys(authority?: AuthorityPin | null, env: NodeJS.ProcessEnv = process.env): TrustedKeys | null {
  if (authority instanceof TrustedKeys) return authority;
  if (authority instanceof PublicKey) return new TrustedKeys([authority]);
  if (typeof authority === 'string') return fromTextOrPath(authority);
  if (authority != null) throw new ConfigurationError('authority must be TrustedKeys, a PublicKey, pin text or a pin file path');
  const value = env[PUBKEY_ENV];
  const file = env[PUBKEY_FILE_ENV];
  if (value && file) throw new ConfigurationError(`set ${PUBKEY_ENV} or ${PUBKEY_FILE_ENV}, not both`);
  if (value) return TrustedKeys.parse(value);
  return file ? fromFile(file) : null;
}

function fromTextOrPath(value: string): TrustedKeys {
  const text = value.trim();
  if (text && !text.includes('\n') && existsSync(text) && statSync(text).isFile()) return fromFile(text);
  try {
    return TrustedKeys.parse(value);
  } catch (error) {
    if (error instanceof ConfigurationError && (text.includes('/') || /\.(pub|json|pem|txt)$/.test(text))) {
      throw new ConfigurationError(`no authority public key file at ${text}`);
    }
    throw error;
  }
}

function fromFile(path: string): TrustedKeys {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigurationError(`cannot read the authority public key file ${path}: ${(error as Error).message}`);
  }
  return TrustedKeys.parse(text);
}

export interface VerifiedOptions {
  /** Where the gate remembers the newest state head (default `defaultHeadFile`: shared with Python gates). */
  headFile?: string;
}

/**
 * `client` behind the authority check, with the keys `pinnedKeys` finds for `authority`. A
 * VerifiedClient is returned as it is when `authority` is not given. Without keys the result verifies
 * nothing, and a warning is emitted once per process.
 */
export function verifiedClient(client: AgentClient, authority?: AuthorityPin | null, options: VerifiedOptions = {}): VerifiedClient {
  if (client instanceof VerifiedClient && authority == null && options.headFile === undefined) return client;
  const keys = pinnedKeys(authority);
  if (keys === null && !warned) {
    warned = true;
    process.emitWarning(UNVERIFIED, { type: 'UnverifiedWarning' });
  }
  return new VerifiedClient(client, keys, options);
}

/** What a gate refused, why (a SignatureError reason), what did not verify, and what the model reads. */
export interface Refusal {
  reason: string;
  problem: string;
  message: string;
}

interface CallRefusal {
  verdict: Verdict;
  error: SignatureError;
  rule: string | null;
}

/** An AgentClient that verifies, with pinned keys, whatever lets a call run; everything else is the server's. */
export class VerifiedClient extends AgentClient {
  readonly #rules = new Map<string, string>();
  /** The newest state head this gate has seen (null unverified): see `heads.ts`. */
  readonly heads: HeadGuard | null;
  /** The policy the server evaluates, read right after the head (so it is never older than the head it is held to). */
  #served: PolicyDocument | null = null;

  constructor(
    client: AgentClient,
    readonly keys: TrustedKeys | null,
    options: VerifiedOptions = {},
  ) {
    super(client.transport);
    this.heads = keys === null ? null : new HeadGuard(
            keys,
            (kid) => this.#fetchHead(kid),
            new HeadFile(options.headFile ?? defaultHeadFile(keys)),
            undefined,
            async () => {
              this.#served = await this.policy();
            },
          );
  }

  /** True when keys are pinned, so unsigned or badly signed decisions and rules let nothing run. */
  get verified(): boolean {
    return this.keys !== null;
  }

  override async evaluate(call: ToolCall): Promise<Verdict> {
    const verdict = await super.evaluate(call);
    return (await this.#callRefusal(call, verdict))?.verdict ?? verdict;
  }

  /**
   * `evaluate` for a call about to run now without a request (a gated tool's own check): a standing
   * rule's allow that does not verify is a deny, and its refusal is recorded, as `submit` records it.
   */
  async evaluateToRun(call: ToolCall): Promise<Verdict> {
    const verdict = await super.evaluate(call);
    const refusal = await this.#callRefusal(call, verdict);
    if (refusal === null) return verdict;
    await this.#recordRefusal(call, refusal);
    return refusal.verdict;
  }

  override async submit(call: ToolCall, options: SubmitOptions = {}): Promise<Submission> {
    return this.#checked(call, await super.submit(call, options));
  }

  override async prepare(call: ToolCall, options: SubmitOptions = {}): Promise<Submission> {
    return this.#checked(call, await super.prepare(call, options));
  }

  /**
   * Verify the decision of `request` (as the server reports it; fetched when not given or not decided),
   * then mark it applied. A decision that does not verify closes the request with the refusal as its
   * reason and throws ConflictError `request_cancelled`: nothing may run.
   */
  override async markApplied(requestId: string, args?: JsonObject | null, request?: ApprovalRequest): Promise<ApprovalRequest> {
    let claims: DecisionClaims | null = null;
    if (this.keys !== null) {
      const current = request?.id === requestId && request.status === 'decided' ? request : await this.get(requestId);
      if (current.status === 'decided') claims = await this.#verifyOrRefuse(current, args ?? null, this.keys);
    }
    const applied = await super.markApplied(requestId, args);
    if (claims !== null && runsTool(claims)) this.heads?.applied(requestId, claims.apply_by);
    return applied;
  }

  /**
   * Record on the server that this gate refused what let a call run (`POST /refusals`): a decided request
   * is closed (cancelled, `message` its reason) and returned; null for a call, or a request that moved on.
   */
  async refuse(target: { request_id: string } | { call: ToolCall; rule: string | null }, refusal: Refusal): Promise<ApprovalRequest | null> {
    const body = { ...target, reason: refusal.reason, problem: short(refusal.problem, 2000), message: short(refusal.message, 4000) };
    return (await this.transport.send({ method: 'POST', path: '/refusals', body, idempotencyKey: randomUUID() })).body as ApprovalRequest | null;
  }

  async #verifyOrRefuse(request: ApprovalRequest, args: JsonObject | null, keys: TrustedKeys): Promise<DecisionClaims> {
    const tool = request.call.tool;
    try {
      const claims = checkDecision(request, args, keys, new Date());
      if (runsTool(claims)) await this.#checkHeadBeforeApplying(request);
      return claims;
    } catch (error) {
      if (!(error instanceof SignatureError)) throw error;
      const lapsed = error.reason === 'lapsed';
      const message = lapsed ? APPROVAL_LAPSED(tool, request.apply_within_seconds ?? 0) : refusalMessage(error, tool, request.id);
      await this.refuse({ request_id: request.id }, { reason: error.reason, problem: error.message, message });
      throw new ConflictError(message, 409, lapsed ? 'request_expired' : 'request_cancelled');
    }
  }

  /** SignatureError (`stale_head`, `rolled_back`, `consumed`) when the state head refuses this approval. */
  async #checkHeadBeforeApplying(request: ApprovalRequest): Promise<void> {
    const heads = this.heads;
    if (heads === null) return;
    await this.#checkPolicy(await heads.current());
    if (heads.consumed(request.id)) {
      throw new SignatureError(`the approval on request ${request.id} was applied already (the store shows it decided again)`, 'consumed');
    }
  }

  /** The server's newest head signed with key `kid` (the guard then reads the policy the server evaluates now). */
  async #fetchHead(kid: string): Promise<string | null> {
    const reply = await this.transport.send({ method: 'GET', path: '/state-head', query: { kid } });
    const token = (reply.body as { token?: unknown } | null)?.token;
    return typeof token === 'string' ? token : null;
  }

  /**
   * SignatureError `rolled_back` when the server evaluates a policy older than the head's (Python
   * `VerifiedQueue._check_policy`, with the version the server reports and the digest of the document it serves).
   */
  async #checkPolicy(head: StateHeadClaims): Promise<void> {
    if (head.policy_version === null) return; // no policy version was ever signed
    const served = this.#served ?? (this.#served = await this.policy());
    const version = served.policy_version ?? null;
    if (served.local === true || (version !== null && version > head.policy_version)) return; // development, or signed after this head
    let problem: string;
    if (version === null) {
      problem = `the store holds no verified policy, and the authority's state head names version ${head.policy_version}`;
    } else if (version < head.policy_version) {
      problem = `the store's current policy is version ${version}, older than version ${head.policy_version} that the authority's state head names`;
    } else if (jsonDigest(served.document) !== head.policy_digest) {
      problem = `policy version ${version} is not the document the authority's state head names`;
    } else {
      return;
    }
    throw new SignatureError(`${problem} (a rollback)`, 'rolled_back');
  }

  /** A deny verdict when the state head refuses the allow `verdict` for `call`; else null. */
  async #headRefusal(call: ToolCall, verdict: Verdict): Promise<CallRefusal | null> {
    const heads = this.heads;
    if (heads === null || verdict.kind !== 'allow') return null;
    let head: StateHeadClaims;
    try {
      head = await heads.current();
      await this.#checkPolicy(head);
    } catch (error) {
      if (!(error instanceof SignatureError)) throw error;
      const template = error.reason === 'stale_head' ? STALE : ROLLED_BACK;
      return { verdict: headDeny(verdict, template(call.tool, error.message)), error, rule: null };
    }
    const rule = verdict.standing_rule;
    if (rule != null && head.revoked_rules.includes(rule.id)) {
      const error = new SignatureError(`standing rule ${rule.id} is revoked in the state head`, 'revoked_rule');
      return { verdict: headDeny(verdict, REVOKED_RULE(rule.id, call.tool)), error, rule: rule.id };
    }
    return null;
  }

  /** The refusal of an allow `verdict` for `call`: its rule's signature first, then the state head. */
  async #callRefusal(call: ToolCall, verdict: Verdict): Promise<CallRefusal | null> {
    return this.#ruleRefusal(call, verdict) ?? (await this.#headRefusal(call, verdict));
  }

  async #checked(call: ToolCall, submission: Submission): Promise<Submission> {
    if (submission.request !== null) return submission;
    const refusal = await this.#callRefusal(call, submission.verdict);
    if (refusal === null) return submission;
    await this.#recordRefusal(call, refusal);
    return { verdict: refusal.verdict, request: null, stored: true };
  }

  async #recordRefusal(call: ToolCall, refusal: CallRefusal): Promise<void> {
    const { verdict, error, rule } = refusal;
    await this.refuse({ call, rule }, { reason: error.reason, problem: error.message, message: verdict.reason });
  }

  #ruleRefusal(call: ToolCall, verdict: Verdict): CallRefusal | null {
    const rule = verdict.standing_rule;
    if (this.keys === null || verdict.kind !== 'allow' || rule == null) return null;
    const error = this.#ruleProblem(rule, call, this.keys);
    if (error === null) return null;
    const reason = RULE_REFUSED(rule.id, call.tool, error.message);
    const denied: Verdict = { ...verdict, kind: 'deny', reason, rule: rule.id, standing_rule: null };
    return { verdict: denied, error, rule: rule.id };
  }

  /** Why the allow rule `rule` may not let `call` run (its signature, or not covering the call); null if it may. */
  #ruleProblem(rule: StandingRule, call: ToolCall, keys: TrustedKeys): SignatureError | null {
    const text = canonicalJson(rule);
    if (this.#rules.get(rule.id) !== text) {
      if (!rule.signature) return new SignatureError(`standing rule ${rule.id} is not signed`, 'unsigned');
      try {
        const claims = verifyStandingRule(rule.signature, keys, rule);
        if (claims.verdict !== 'allow') return new SignatureError(`standing rule ${rule.id} was signed as a ${claims.verdict} rule`, 'binding');
      } catch (error) {
        if (error instanceof SignatureError) return error;
        throw error;
      }
      if (this.#rules.size >= RULE_CACHE_SIZE) this.#rules.clear();
      this.#rules.set(rule.id, text);
    }
    if (!standingRuleMatches(rule, call, new Date())) {
      return new SignatureError(`standing rule ${rule.id} does not cover this call of ${call.tool}`, 'binding');
    }
    return null;
  }
}

/**
 * The signed claims of `request`'s decision, checked against it and `runArgs` (what will run; null for a
 * call nothing will run for). Throws SignatureError (`unsigned` when it carries no token, `lapsed` past
 * its signed `apply_by`).
 */
export function checkDecision(request: ApprovalRequest, runArgs: JsonObject | null, keys: TrustedKeys, now: Date): DecisionClaims {
  const { decision, id } = request;
  const tokens = request.signatures ?? [];
  if (decision === null || tokens.length === 0) throw new SignatureError(`the decision on request ${id} is not signed`, 'unsigned');
  const expected = { requestId: id, fingerprint: request.fingerprint, now };
  let signed: DecisionClaims[];
  if (decision.kind === 'approve') {
    signed = verifyApprovals(tokens, keys, { ...expected, required: request.approvals_required });
  } else if (tokens.length === 1) {
    signed = [verifyDecision(tokens[0]!, keys, { ...expected, decision })];
  } else {
    throw new SignatureError(`request ${id} carries ${tokens.length} tokens for one ${decision.kind}`, 'binding');
  }
  const claims = signed.find((c) => decisionDifferences(c, decision).length === 0);
  if (claims === undefined) {
    const differ = decisionDifferences(signed[0]!, decision).join(', ');
    throw new SignatureError(`the stored decision on request ${id} differs from the signed one: ${differ}`, 'binding');
  }
  if (claims.tool !== request.call.tool) throw new SignatureError(`the decision on request ${id} was signed for tool ${claims.tool}`, 'binding');
  const runs = claims.kind === 'approve' ? claims.fingerprint : claims.kind === 'edit' ? claims.args_fingerprint : null;
  if (runs !== null && (runArgs === null || fingerprint(claims.tool, runArgs) !== runs)) {
    throw new SignatureError(`the arguments about to run are not the ones signed for request ${id}`, 'binding');
  }
  return claims;
}

/** True for an approve or edit: a decision that lets the tool run (Python `runs_fingerprint is not None`). */
function runsTool(claims: DecisionClaims): boolean {
  return claims.kind === 'approve' || claims.kind === 'edit';
}

/** What the model reads when a decision is refused: the state head's words for its reasons, else the signature's. */
function refusalMessage(error: SignatureError, tool: string, request: string): string {
  if (error.reason === 'stale_head') return STALE(tool, error.message);
  if (error.reason === 'rolled_back') return ROLLED_BACK(tool, error.message);
  if (HEAD_REASONS.has(error.reason)) return CONSUMED(tool, request);
  return DECISION_REFUSED(tool, request, error.message);
}

function headDeny(verdict: Verdict, reason: string): Verdict {
  return { ...verdict, kind: 'deny', reason, rule: HEAD_RULE, standing_rule: null };
}

function short(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit - 1)}…`;
}
