/** crossgate's native agent API from TypeScript: the client, the check before a tool runs, and verification. */

export { AgentClient, MAX_WAIT_SECONDS } from './client.js';
export type { ClientOptions, OutcomeRecord, Page, ParkedQuery, ParkOptions, RequestQuery, SubmitOptions } from './client.js';
export { PublicKey, TrustedKeys, verifyDecision, verifyToken } from './authority.js';
export type { DecisionClaims, ExpectedDecision } from './authority.js';
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
export { alreadyAppliedMessage, denyMessage } from './messages.js';
export * from './model.js';
export { finished, parked, resumeLeased, resumedSummary } from './runs.js';
export type { Finished, Parked, RunOutcome } from './runs.js';
export { API_PREFIX, Transport } from './transport.js';
export type { Exchange, Reply, TransportOptions } from './transport.js';
