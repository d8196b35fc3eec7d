/** crossgate for Mastra: requireApproval tool calls reviewed in crossgate's queue. */

import './peer.js';

export { CAPABILITIES, DECISION_MAPPING, FRAMEWORK, TAG } from './capabilities.js';
export { Gate, gatedTools } from './gate.js';
export type { GateOptions, MastraRun, RunOptions } from './gate.js';
export { callRequestId } from './scope.js';
export { isGated } from './tools.js';
export type { MastraTool } from './tools.js';
