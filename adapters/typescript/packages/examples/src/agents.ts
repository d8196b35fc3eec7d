/**
 * One scripted agent per TypeScript SDK behind its crossgate gate, with the same three tools
 * (`read_ticket`, `delete_ticket`, `execute_sql`): its model asks for every call of a plan in its first
 * turn (Claude: one call per turn, as the bundled CLI's scripted Messages API does), then ends with a
 * text. Everything runs offline, on each SDK's own test model.
 *
 * Each agent records the calls whose tool body ran, and what its model read for each call, so the
 * cross-SDK tests and the benchmark compare the SDKs on what happened rather than on what the gates say.
 */

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

import { tool as claudeTool } from '@anthropic-ai/claude-agent-sdk';
import { Gate as AiSdkGate } from '@crossgate/ai-sdk';
import { Gate as ClaudeGate } from '@crossgate/claude-agent-sdk';
import type { AgentClient, AuthorityPin, JsonObject, RunOutcome } from '@crossgate/client';
import { Gate as MastraGate, gatedTools } from '@crossgate/mastra';
import { Gate as OpenAIGate } from '@crossgate/openai-agents';
import { calls as claudeScript, cliEnv, told as claudeTold, type MessagesApi } from '@crossgate/testing';
import { Mastra } from '@mastra/core';
import { Agent as MastraAgent } from '@mastra/core/agent';
import { createTool } from '@mastra/core/tools';
import { LibSQLStore } from '@mastra/libsql';
import { Agent as OpenAIAgent, setTracingDisabled, tool as openaiTool } from '@openai/agents';
import { stepCountIs, tool as aiTool } from 'ai';
import { z } from 'zod';

import { OneTurnModel, scriptedLanguageModel, toolOutputs } from './models.js';

setTracingDisabled(true);

export const SDKS = ['ai-sdk', 'mastra', 'openai-agents', 'claude-agent-sdk'] as const;
export type Sdk = (typeof SDKS)[number];

/** One call a scripted model asks for. */
export interface PlannedCall {
  tool: 'read_ticket' | 'delete_ticket' | 'execute_sql';
  args: JsonObject;
}

export interface AgentOptions {
  client: AgentClient;
  /** Where the agent keeps its files (Mastra's LibSQL store, the Claude CLI's config and session files). */
  dir: string;
  /** Pinned authority key(s); default the environment's. */
  authority?: AuthorityPin;
  /** The scripted Anthropic Messages API the Claude CLI talks to (Claude only). */
  messagesApi?: MessagesApi;
  /** The tool bodies; default: each records that it ran and answers `ran <tool> <args>`. */
  body?: (call: PlannedCall) => string;
  /** Claude only: seconds the PreToolUse hook holds a call for its reviewer before deferring it. */
  hold?: number;
}

/** An SDK's agent behind its gate, run on one plan. */
export interface ScriptedAgent {
  readonly sdk: Sdk;
  /** The `framework` its gate reports. */
  readonly framework: string;
  run(run: string): Promise<RunOutcome<unknown>>;
  resume(parkedRun: string): Promise<RunOutcome<unknown>>;
  /** The planned calls whose tool body ran, in order (`tool {args}`). */
  readonly ran: string[];
  /** What the model read for each planned call, by its index in the plan (absent: not answered yet). */
  read(): Record<number, string>;
}

/** The tools' zod shapes, by name. */
export const SHAPES = {
  read_ticket: { id: z.string() },
  delete_ticket: { id: z.string() },
  execute_sql: { query: z.string() },
} as const;
export type ToolName = keyof typeof SHAPES;
const NAMES = Object.keys(SHAPES) as ToolName[];

export const TOOL_DESCRIPTIONS = {
  read_ticket: 'Read a ticket by id.',
  delete_ticket: 'Delete a ticket by id. This cannot be undone.',
  execute_sql: 'Run one SQL statement.',
} as const;

export function callText(call: PlannedCall): string {
  return `${call.tool} ${JSON.stringify(call.args)}`;
}

/** The agent of `sdk` for `plan`, behind its crossgate gate. */
export function scriptedAgent(sdk: Sdk, plan: readonly PlannedCall[], options: AgentOptions): ScriptedAgent {
  const ran: string[] = [];
  const body = (tool: ToolName, args: JsonObject) => {
    const call = { tool, args } as PlannedCall;
    ran.push(callText(call));
    return options.body ? options.body(call) : `ran ${callText(call)}`;
  };
  const built = BUILDERS[sdk](plan, options, body);
  return { sdk, framework: built.framework, run: built.run, resume: built.resume, ran, read: built.read };
}

type Body = (tool: ToolName, args: JsonObject) => string;
interface Built {
  framework: string;
  run(run: string): Promise<RunOutcome<unknown>>;
  resume(parkedRun: string): Promise<RunOutcome<unknown>>;
  read(): Record<number, string>;
}
const PROMPT = 'Work through the tickets.';
const callId = (index: number) => `call_${index}`;

function byIndex(plan: readonly PlannedCall[], answers: Record<string, string>): Record<number, string> {
  const found: Record<number, string> = {};
  plan.forEach((_, index) => {
    const text = answers[callId(index)];
    if (text !== undefined) found[index] = text;
  });
  return found;
}

const BUILDERS: Record<Sdk, (plan: readonly PlannedCall[], options: AgentOptions, body: Body) => Built> = {
  'ai-sdk': (plan, options, body) => {
    const model = scriptedLanguageModel(plan.map((c, i) => ({ ...c, callId: callId(i) })));
    const tools = Object.fromEntries(
      NAMES.map((name) => [
        name,
        aiTool({ description: TOOL_DESCRIPTIONS[name], inputSchema: z.object(SHAPES[name]), execute: async (args: JsonObject) => body(name, args) }),
      ]),
    );
    const gate = new AiSdkGate({ client: options.client, model, tools, agent: 'scripted', settings: { stopWhen: stepCountIs(4) }, ...pin(options) });
    return {
      framework: gate.framework,
      run: (run) => gate.run(PROMPT, { run }),
      resume: (parkedRun) => gate.resume(parkedRun),
      read: () => byIndex(plan, toolOutputs(model.doGenerateCalls.at(-1)?.prompt ?? [])),
    };
  },
  mastra: (plan, options, body) => {
    const model = scriptedLanguageModel(plan.map((c, i) => ({ ...c, callId: callId(i) })));
    const raw = Object.fromEntries(
      NAMES.map((name) => [
        name,
        createTool({ id: name, description: TOOL_DESCRIPTIONS[name], inputSchema: z.object(SHAPES[name]), execute: async (args: JsonObject) => body(name, args) }),
      ]),
    );
    const tools = gatedTools(options.client, raw, options.authority);
    const agent = new MastraAgent({ id: 'scripted', name: 'Scripted', instructions: 'Work through the tickets.', model: model as never, tools: tools as never });
    mkdirSync(options.dir, { recursive: true });
    const storage = new LibSQLStore({ id: 'scripted', url: `file:${join(options.dir, 'mastra.db')}` });
    const mastra = new Mastra({ agents: { scripted: agent }, storage, logger: false });
    const gate = new MastraGate({ client: options.client, mastra, agentId: 'scripted', ...pin(options) });
    return {
      framework: gate.framework,
      run: (run) => gate.run(PROMPT, { run }),
      resume: (parkedRun) => gate.resume(parkedRun),
      read: () => byIndex(plan, toolOutputs(model.doStreamCalls.at(-1)?.prompt ?? [])),
    };
  },
  'openai-agents': (plan, options, body) => {
    const model = new OneTurnModel(plan.map((c, i) => ({ ...c, callId: callId(i) })));
    const tools = NAMES.map((name) =>
      openaiTool({ name, description: TOOL_DESCRIPTIONS[name], parameters: z.object(SHAPES[name]), execute: async (args: JsonObject) => body(name, args) }),
    );
    const agent = new OpenAIAgent({ name: 'Scripted', instructions: 'Work through the tickets.', tools, model });
    const gate = new OpenAIGate({ client: options.client, sdkAgent: agent, ...pin(options) });
    return {
      framework: gate.framework,
      run: (run) => gate.run(PROMPT, { run }),
      resume: (parkedRun) => gate.resume(parkedRun),
      read: () => byIndex(plan, model.told()),
    };
  },
  'claude-agent-sdk': (plan, options, body) => {
    const api = options.messagesApi;
    if (api === undefined) throw new Error('the Claude agent needs the scripted Messages API (messagesApi)');
    const script = claudeScript(...plan.map((c) => [c.tool, c.args] as [string, Record<string, unknown>]));
    const tools = NAMES.map((name) =>
      claudeTool(name, TOOL_DESCRIPTIONS[name], SHAPES[name], async (args: JsonObject) => ({ content: [{ type: 'text' as const, text: body(name, args) }] })),
    );
    const work = join(options.dir, 'work');
    mkdirSync(work, { recursive: true });
    const sessionOptions = { env: cliEnv(api.baseUrl, join(options.dir, 'cli')), cwd: work, settingSources: [], tools: [] };
    const hold = options.hold === undefined ? {} : { hold: options.hold };
    const gate = new ClaudeGate({ client: options.client, options: sessionOptions, servers: { tickets: tools }, ...hold, ...pin(options) });
    return {
      framework: gate.framework,
      run: () => gate.run(script),
      resume: (parkedRun) => gate.resume(parkedRun),
      // The CLI names a call's result by its tool use; the script makes the calls in plan order.
      read: () => Object.fromEntries(claudeTold(api.requests(), script).map((t, index) => [index, t.text])),
    };
  },
};

function pin(options: AgentOptions): { authority?: AuthorityPin } {
  return options.authority === undefined ? {} : { authority: options.authority };
}
