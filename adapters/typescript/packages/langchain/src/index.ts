/** crossgate for LangChain.js `createAgent`: a middleware that sends tool calls to crossgate's queue. */

import './peer.js';

export { CAPABILITIES, DECISION_MAPPING, FRAMEWORK } from './capabilities.js';
export { allowedDecisionsFor, importInterruptOn, interruptOnPolicy } from './interrupt-on.js';
export type { ImportOptions, InterruptOn, InterruptOnSetting, PolicyRuleDocument } from './interrupt-on.js';
export { crossgateMiddleware } from './middleware.js';
export type { MiddlewareOptions } from './middleware.js';
export { callRequestId, Gate } from '@crossgate/langgraph';
export type { GateOptions, RunOptions } from '@crossgate/langgraph';
