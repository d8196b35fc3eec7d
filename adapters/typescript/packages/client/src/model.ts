/**
 * The wire model of crossgate's native agent API: the JSON form (`model_dump(mode="json")`) of the
 * pydantic models in `crossgate.model`. Field names are the server's, snake_case, so a body goes on
 * the wire as it is typed here.
 */

/** A JSON value as the server accepts it. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
/** A JSON object: a tool call's arguments, a context, metadata. */
export type JsonObject = { [key: string]: JsonValue };

/** The four answers a reviewer can give. */
export type DecisionKind = 'approve' | 'edit' | 'reject' | 'respond';
export const ALL_DECISIONS: readonly DecisionKind[] = Object.freeze(['approve', 'edit', 'reject', 'respond']);

/** What the policy says before any human: deny beats ask beats allow. */
export type VerdictKind = 'allow' | 'ask' | 'deny';

export type RequestStatus = 'pending' | 'decided' | 'applied' | 'rejected' | 'answered' | 'expired' | 'cancelled';

/** Statuses of a request whose decision reached the agent: applied (approve or edit), rejected or answered. */
export const APPLIED_STATUSES: readonly RequestStatus[] = ['applied', 'rejected', 'answered'];
export type ParkedRunStatus = 'parked' | 'resuming' | 'resumed' | 'failed';
export type RememberScope = 'once' | 'run' | 'session' | 'forever';
export type RememberMatch = 'tool' | 'pattern' | 'exact';

/** A tool call a model proposed, as any SDK reports it. */
export interface ToolCall {
  framework: string;
  tool: string;
  args: JsonObject;
  call_id?: string | null;
  /** The SDK-side handle of the run. */
  run?: string | null;
  /** A longer-lived grouping of runs; standing rules of scope `session` bind to it. */
  session?: string | null;
  agent?: string | null;
  context?: JsonObject;
}

/** The policy's answer for one call, before any human. */
export interface Verdict {
  kind: VerdictKind;
  reason: string;
  rule: string | null;
  allowed_decisions: DecisionKind[];
  description: string | null;
  timeout_seconds: number | null;
  apply_within_seconds: number | null;
  approvals: number;
  /** The standing rule that allowed the call, when one did: a gate with pinned keys verifies its signature. */
  standing_rule?: StandingRule | null;
}

/** A remembered decision the policy consults on every later call (Python `crossgate.model.StandingRule`). */
export interface StandingRule {
  id: string;
  effect: 'allow' | 'deny';
  /** Exact tool name or a glob such as `read_*`. */
  tool: string;
  match: RememberMatch;
  arg_patterns: Record<string, string>;
  /** For `match: exact`: the fingerprint the call must have. */
  args_fingerprint: string | null;
  agent: string | null;
  framework: string | null;
  scope: RememberScope;
  run: string | null;
  session: string | null;
  message: string | null;
  created_at: string;
  created_by: string | null;
  source_request: string | null;
  expires_at: string | null;
  revoked_at: string | null;
  revoked_by: string | null;
  /** The authority's token over the rule (JWS compact); revocation is not part of what it signs. */
  signature: string | null;
}

export interface Remember {
  scope: RememberScope;
  match: RememberMatch;
  arg_patterns: Record<string, string>;
  this_agent_only: boolean;
  expires_at: string | null;
}

interface DecisionBase {
  remember?: Remember | null;
  note?: string | null;
  fingerprint?: string | null;
  reviewer?: string | null;
  channel?: string | null;
  decided_at?: string | null;
}

export interface Approve extends DecisionBase {
  kind: 'approve';
}
export interface Edit extends DecisionBase {
  kind: 'edit';
  args: JsonObject;
}
export interface Reject extends DecisionBase {
  kind: 'reject';
  /** What the model reads. */
  message: string;
}
export interface Respond extends DecisionBase {
  kind: 'respond';
  /** Returned as the tool's result; the tool does not run. */
  content: string;
}
export type Decision = Approve | Edit | Reject | Respond;

/** A tool call the policy sent to a human, and everything that happened to it. */
export interface ApprovalRequest {
  id: string;
  call: ToolCall;
  fingerprint: string;
  status: RequestStatus;
  reason: string;
  rule: string | null;
  description: string | null;
  allowed_decisions: DecisionKind[];
  args_schema: JsonObject | null;
  requested_by: string | null;
  created_at: string;
  expires_at: string | null;
  decision: Decision | null;
  decided_at: string | null;
  applied_at: string | null;
  closed_reason: string | null;
  apply_within_seconds: number | null;
  approvals_required: number;
  /**
   * The authority's tokens over the decision (JWS compact): one, or one per approver for a request that
   * needs several; empty while pending, or when the server signs nothing.
   */
  signatures: string[];
}

/** SDK state of a run that waits for decisions, kept server-side so any process can resume it. */
export interface ParkedRun {
  id: string;
  framework: string;
  run: string;
  request_ids: string[];
  /** The SDK's serialised state: only the owning agent credential ever gets it back. */
  state: string;
  metadata: JsonObject;
  status: ParkedRunStatus;
  created_at: string;
  updated_at: string;
  lease_owner: string | null;
  lease_until: string | null;
  attempts: number;
  outcome: string | null;
}

/** One entry of the append-only, hash-chained audit log. */
export interface AuditEvent {
  seq: number;
  at: string;
  kind: string;
  request_id: string | null;
  run: string | null;
  actor: string | null;
  channel: string | null;
  payload: JsonObject;
  prev_hash: string;
  hash: string;
}

/** What `submit` and `prepare` return: the verdict, and the request when the verdict is ask. */
export interface Submission {
  verdict: Verdict;
  request: ApprovalRequest | null;
  /** False for a request `prepare` built that nobody stored yet (`park(newRequests)` stores it). */
  stored: boolean;
}

/** The policy the server judges calls by. */
export interface PolicyDocument {
  version: string | null;
  document: JsonObject;
  rules_version: number;
  /** The store's signed policy version the server evaluates; null for none (or a local policy, or one refused). */
  policy_version?: number | null;
  /** True for a local policy (development): not held to the state head's version. */
  local?: boolean;
}

/** The answer the SDK gets: the decision, or a rejection for an expired or cancelled request; null while pending. */
export function resolution(request: ApprovalRequest): Decision | null {
  if (request.status === 'decided' || APPLIED_STATUSES.includes(request.status)) return request.decision;
  if (request.status === 'expired') {
    return { kind: 'reject', message: request.closed_reason ?? EXPIRY_MESSAGE, fingerprint: request.fingerprint };
  }
  if (request.status === 'cancelled') {
    return { kind: 'reject', message: request.closed_reason ?? CANCEL_MESSAGE, fingerprint: request.fingerprint };
  }
  return null;
}

/** The arguments that may run: the proposal for approve, the edit for edit, else null. */
export function approvedArgs(request: ApprovalRequest): JsonObject | null {
  const decision = resolution(request);
  if (decision?.kind === 'approve') return request.call.args;
  if (decision?.kind === 'edit') return decision.args;
  return null;
}

/** True while a reviewer can still decide the request. */
export function isOpen(request: ApprovalRequest): boolean {
  return request.status === 'pending';
}

// The same texts as crossgate.model, so a TypeScript agent's model reads what a Python agent's does.
export const EXPIRY_MESSAGE =
  'No reviewer answered this request in time, so the tool call was not run. ' +
  "Do not retry it; tell the user it needs a person's approval.";
export const CANCEL_MESSAGE = 'This tool call was cancelled before anyone decided it, so it was not run. Do not retry it.';
