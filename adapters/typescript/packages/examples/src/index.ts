/** Runnable TypeScript agents behind crossgate (private): the demo's agent and one scripted agent per SDK. */

export { callText, scriptedAgent, SDKS, SHAPES, TOOL_DESCRIPTIONS } from './agents.js';
export type { AgentOptions, PlannedCall, ScriptedAgent, Sdk, ToolName } from './agents.js';
export { OneTurnModel, scriptedLanguageModel, toolOutputs } from './models.js';
export type { ModelCall } from './models.js';
