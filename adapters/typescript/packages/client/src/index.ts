/** crossgate's native agent API from TypeScript: the client, the check before a tool runs, and verification. */

export { AgentClient, MAX_WAIT_SECONDS } from './client.js';
export type { ClientOptions, OutcomeRecord, Page, ParkedQuery, ParkOptions, RequestQuery, SubmitOptions } from './client.js';
export {
  decisionDifferences,
  PublicKey,
  sameInstant,
  TrustedKeys,
  verifyApprovals,
  verifyDecision,
  verifyStandingRule,
  verifyStateHead,
  verifyToken,
} from './authority.js';
export type { ExpectedApprovals, ExpectedDecision } from './authority.js';
export { DECISION_TYP, parseDecisionClaims, parseStandingRuleClaims, parseStateHeadClaims, STANDING_RULE_TYP, STATE_HEAD_TYP } from './claims.js';
export type { DecisionClaims, StandingRuleClaims, StateHeadClaims } from './claims.js';
export { filterBytes, inFilter } from './consumed.js';
export { defaultHeadFile, FETCH_SECONDS, FOREVER, HEAD_DIR_ENV, HEAD_FILE_FORMAT, HeadFile, HeadGuard, readStateHead } from './heads.js';
export { globMatch, standingRuleMatches } from './rules.js';
export { checkDecision, HEAD_REASONS, HEAD_RULE, pinnedKeys, PUBKEY_ENV, PUBKEY_FILE_ENV, UNVERIFIED, VerifiedClient, verifiedClient } from './verified.js';
export type { AuthorityPin, Refusal, VerifiedOptions } from './verified.js';
export { canonicalJson, fingerprint, jsonDigest } from './canonical.js';
export { applyDecision, runChecked, runRecorded } from './check.js';
export type { Application, CheckOptions, ToolAnswer } from './check.js';
export {
  AdapterError,
  ApiError,
  ConfigurationError,
  ConflictError,
  CrossgateError,
  ForbiddenError,
  InvalidArgumentsError,
  InvalidRequestError,
  NotFoundError,
  SignatureError,
  UnreachableError,
} from './errors.js';
export type { SignatureReason } from './errors.js';
export { requestId } from './ids.js';
export { installedVersion, requirePeer } from './peers.js';
export type { PeerRange } from './peers.js';
export {
  alreadyAppliedMessage,
  APPROVAL_LAPSED,
  CONSUMED,
  DECISION_REFUSED,
  denyMessage,
  fingerprintRefusal,
  NOT_REVIEWED,
  REVOKED_RULE,
  ROLLED_BACK,
  RULE_REFUSED,
  STALE,
} from './messages.js';
export * from './model.js';
export { finished, parked, resumeLeased, resumedSummary } from './runs.js';
export type { Finished, Parked, RunOutcome } from './runs.js';
export { API_PREFIX, Transport } from './transport.js';
export type { Exchange, Reply, TransportOptions } from './transport.js';
