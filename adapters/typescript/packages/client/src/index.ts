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
  verifyToken,
} from './authority.js';
export type { ExpectedApprovals, ExpectedDecision } from './authority.js';
export { DECISION_TYP, parseDecisionClaims, parseStandingRuleClaims, STANDING_RULE_TYP } from './claims.js';
export type { DecisionClaims, StandingRuleClaims } from './claims.js';
export { globMatch, standingRuleMatches } from './rules.js';
export { checkDecision, pinnedKeys, PUBKEY_ENV, PUBKEY_FILE_ENV, UNVERIFIED, VerifiedClient, verifiedClient } from './verified.js';
export type { AuthorityPin, Refusal } from './verified.js';
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
export { alreadyAppliedMessage, APPROVAL_LAPSED, DECISION_REFUSED, denyMessage, fingerprintRefusal, NOT_REVIEWED, RULE_REFUSED } from './messages.js';
export * from './model.js';
export { finished, parked, resumeLeased, resumedSummary } from './runs.js';
export type { Finished, Parked, RunOutcome } from './runs.js';
export { API_PREFIX, Transport } from './transport.js';
export type { Exchange, Reply, TransportOptions } from './transport.js';
