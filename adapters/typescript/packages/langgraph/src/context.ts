/**
 * Who and where a call comes from, read from the LangGraph config of the node that makes it: the
 * thread (the crossgate run), and what a `Gate` put under `configurable.crossgate` (agent, session,
 * the person the run acts for, the app's context). Outside a graph there is no config: nothing runs.
 */

import { ConfigurationError, type JsonObject, type ToolCall } from '@crossgate/client';
import { getConfig } from '@langchain/langgraph';

/** The `configurable.crossgate` entry a Gate sets on every invoke. */
export interface GateConfig {
  agent?: string | null;
  session?: string | null;
  requested_by?: string | null;
  context?: JsonObject;
}

export interface RunContext {
  /** The thread id: the crossgate run of every call the thread makes. */
  readonly run: string;
  readonly agent: string | null;
  readonly session: string | null;
  readonly requestedBy: string | null;
  readonly context: JsonObject;
  /** The node making the call and its step, for ids of calls that have no tool call id. */
  readonly node: string | null;
  readonly step: number | null;
}

/** The context of the running node; ConfigurationError outside a graph or without a thread id. */
export function runContext(agent?: string | null): RunContext {
  let config: ReturnType<typeof getConfig>;
  try {
    config = getConfig();
  } catch {
    throw new ConfigurationError('crossgate needs a LangGraph thread: call it inside a graph node or tool, run with a checkpointer');
  }
  const configurable = (config.configurable ?? {}) as Record<string, unknown>;
  const thread = configurable.thread_id;
  if (typeof thread !== 'string' || thread === '') {
    throw new ConfigurationError('crossgate needs configurable.thread_id: a paused call resumes only on its thread');
  }
  const gate = (isObject(configurable.crossgate) ? configurable.crossgate : {}) as GateConfig;
  const metadata = (config.metadata ?? {}) as Record<string, unknown>;
  const name = agent ?? gate.agent ?? (typeof metadata.lc_agent_name === 'string' ? metadata.lc_agent_name : null);
  return {
    run: thread,
    agent: name,
    session: gate.session ?? null,
    requestedBy: gate.requested_by ?? null,
    context: gate.context ?? {},
    node: typeof metadata.langgraph_node === 'string' ? metadata.langgraph_node : null,
    step: typeof metadata.langgraph_step === 'number' ? metadata.langgraph_step : null,
  };
}

/** The neutral call crossgate judges for one tool call of `ctx`'s run. */
export function neutralCall(ctx: RunContext, framework: string, tool: string, args: JsonObject, callId: string): ToolCall {
  const context: JsonObject = { ...ctx.context };
  if (ctx.requestedBy !== null) context.requested_by = ctx.requestedBy;
  return { framework, tool, args, call_id: callId, run: ctx.run, session: ctx.session, agent: ctx.agent, context };
}

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
