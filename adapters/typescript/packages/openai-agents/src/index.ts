/** crossgate for the OpenAI Agents SDK (JavaScript): needsApproval tool calls reviewed in crossgate's queue. */

import './peer.js';

export { CAPABILITIES, CAPABILITY_TABLE, DECISION_MAPPING, FRAMEWORK, TAG } from './capabilities.js';
export type { Capability } from './capabilities.js';
export { Gate } from './gate.js';
export type { GateOptions, RunOptions, SdkResult } from './gate.js';
export { callRequestId } from './scope.js';
export { install, isGated } from './tools.js';
export type { GateBinding } from './tools.js';
