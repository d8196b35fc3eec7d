/** crossgate for the Vercel AI SDK 7: toolApproval requests reviewed in crossgate's queue. */

import './peer.js';

export { approvalFunction } from './approval.js';
export type { ApprovalInput, Status } from './approval.js';
export { CAPABILITIES, DECISION_MAPPING, FRAMEWORK, TAG } from './capabilities.js';
export { Gate } from './gate.js';
export type { AiSdkRun, CallSettings, GateOptions, GenerateResult, RunOptions } from './gate.js';
export { callRequestId } from './scope.js';
