/** crossgate for the Claude Agent SDK (TypeScript): every tool call of a session reviewed in crossgate's queue. */

import './peer.js';

export { Binding, hookOutput } from './binding.js';
export type { BindingOptions } from './binding.js';
export { callRequestId } from './calls.js';
export type { SeenCall, SessionScope } from './calls.js';
export {
  CAPABILITY_TABLE,
  CLI_CAPABILITIES,
  DECISION_MAPPING,
  FRAMEWORK,
  GATED_CAPABILITIES,
  TAG,
} from './capabilities.js';
export type { Capability } from './capabilities.js';
export { Gate, TOOL_DEFERRED } from './gate.js';
export type { GateOptions, RunOptions } from './gate.js';
export { nameTool } from './names.js';
export type { ToolName } from './names.js';
