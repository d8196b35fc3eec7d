/** crossgate for LangGraph.js: `requestApproval()` in a node, `gatedToolNode`, and a `Gate` that parks and resumes threads. */

import './peer.js';

export { requestApproval } from './approval.js';
export type { Approval, ApprovalOptions } from './approval.js';
export { CAPABILITIES, DECISION_MAPPING, FRAMEWORK, TAG } from './capabilities.js';
export { runContext } from './context.js';
export type { GateConfig, RunContext } from './context.js';
export { Gate } from './gate.js';
export type { GateOptions, RunOptions, Runnable } from './gate.js';
export { EDIT_NOTICE, guardedRun } from './guard.js';
export type { GuardedCall } from './guard.js';
export { gatedToolNode } from './node.js';
export type { ToolNodeOptions } from './node.js';
export { callRequestId, INVALID, reviewCalls } from './review.js';
export type { ProposedCall, Reviewed, ReviewInterrupt, ReviewOptions } from './review.js';
export { inputJsonSchema, validateArgs } from './schema.js';
