/**
 * The measuring half of `tests/benchmarks/bench_typescript.py`: each SDK's own approval round trip against
 * the same round trip through crossgate over HTTP, alternating, one delete per trip.
 *
 *     node dist/bench.js --trips N --warmup W [--sdks ai-sdk,mastra,...]
 *
 * Native (the SDK alone, the decision made in process):
 * - AI SDK: `generateText` asks (toolApproval user-approval), the messages go through JSON, the approval
 *   response is added, `generateText` runs the tool and answers;
 * - Mastra (LibSQL storage): `stream` suspends on requireApproval, `approveToolCall` runs the tool;
 * - OpenAI Agents: `run` interrupts, `state.toString()` → `RunState.fromString` → `approve` → `run`;
 * - Claude Agent SDK: one `query()` whose `canUseTool` allows the call (the bundled CLI, started each trip).
 *
 * Through crossgate (the package's gate, pinned to the server's key): the AI SDK, Mastra and OpenAI gates
 * `run` (park on the server), a reviewer decides over the review API, `resume` runs the tool; the Claude
 * gate holds the call in its hook until a reviewer decides over the review API, in the same single query.
 *
 * Environment: `CROSSGATE_SERVER`, `CROSSGATE_AGENT_TOKEN`, `CROSSGATE_REVIEWER_TOKEN`, `CROSSGATE_WORK`,
 * `MESSAGES_API` (Claude), and `CROSSGATE_AUTHORITY_PUBKEY` (pinned). Prints one JSON line: for each SDK,
 * the seconds of every measured trip, native and through crossgate.
 */

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { createSdkMcpServer, query, tool as claudeTool, type SDKUserMessage } from '@anthropic-ai/claude-agent-sdk';
import { AgentClient, type JsonObject } from '@crossgate/client';
import { cliEnv, calls as claudeScript } from '@crossgate/testing';
import { Mastra } from '@mastra/core';
import { Agent as MastraAgent } from '@mastra/core/agent';
import { createTool } from '@mastra/core/tools';
import { LibSQLStore } from '@mastra/libsql';
import { Agent as OpenAIAgent, run as runOpenAI, RunState, tool as openaiTool } from '@openai/agents';
import { generateText, type ModelMessage, tool as aiTool } from 'ai';
import { z } from 'zod';

import { scriptedAgent, SDKS, type Sdk } from './agents.js';
import { OneTurnModel, scriptedLanguageModel } from './models.js';

const { values } = parseArgs({ options: { trips: { type: 'string', default: '20' }, warmup: { type: 'string', default: '3' }, sdks: { type: 'string' } } });
const trips = Number(values.trips);
const warmup = Number(values.warmup);
const sdks = (values.sdks ? values.sdks.split(',') : [...SDKS]) as Sdk[];
const env = process.env;
const work = env.CROSSGATE_WORK ?? '.';
const client = new AgentClient({ baseUrl: env.CROSSGATE_SERVER ?? '', token: env.CROSSGATE_AGENT_TOKEN ?? '' });
const PLAN = [{ tool: 'delete_ticket' as const, args: { id: 't3' } }];
const deleted: string[] = [];
const deleteBody = async ({ id }: { id: string }) => (deleted.push(id), `deleted ticket ${id}`);

/** A reviewer's decision over the review API, as the page makes it. */
async function approve(requestId: string): Promise<void> {
  const reply = await fetch(`${env.CROSSGATE_SERVER}/api/requests/${encodeURIComponent(requestId)}/decision`, {
    method: 'POST',
    headers: { authorization: `Bearer ${env.CROSSGATE_REVIEWER_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ kind: 'approve' }),
  });
  if (!reply.ok) throw new Error(`deciding ${requestId}: ${reply.status} ${await reply.text()}`);
}

/** Approve each pending request of `framework` as it turns up, until stopped (the Claude gate holds inline). */
function approving(framework: string) {
  let running = true;
  const done = (async () => {
    while (running) {
      const reply = await fetch(`${env.CROSSGATE_SERVER}/api/requests?status=pending&framework=${framework}`, {
        headers: { authorization: `Bearer ${env.CROSSGATE_REVIEWER_TOKEN}` },
      });
      for (const request of ((await reply.json()) as { items: { id: string }[] }).items) await approve(request.id);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  return async () => ((running = false), await done);
}

type Trip = (i: number) => Promise<void>;

function nativeTrip(sdk: Sdk): Trip {
  const dir = join(work, `native-${sdk}`);
  mkdirSync(dir, { recursive: true });
  if (sdk === 'ai-sdk') {
    const model = scriptedLanguageModel([{ tool: 'delete_ticket', args: { id: 't3' }, callId: 'call_0' }]);
    const tools = { delete_ticket: aiTool({ description: 'Delete a ticket by id.', inputSchema: z.object({ id: z.string() }), execute: deleteBody }) };
    const toolApproval = { delete_ticket: 'user-approval' } as const;
    return async () => {
      const first = await generateText({ model, tools, toolApproval, messages: [{ role: 'user', content: 'Delete t3.' }] });
      const asked = first.content.find((p) => p.type === 'tool-approval-request');
      if (asked?.type !== 'tool-approval-request') throw new Error('the AI SDK did not ask');
      const messages = JSON.parse(JSON.stringify([{ role: 'user', content: 'Delete t3.' }, ...first.responseMessages])) as ModelMessage[];
      messages.push({ role: 'tool', content: [{ type: 'tool-approval-response', approvalId: asked.approvalId, approved: true }] });
      await generateText({ model, tools, toolApproval, messages });
    };
  }
  if (sdk === 'mastra') {
    const model = scriptedLanguageModel([{ tool: 'delete_ticket', args: { id: 't3' }, callId: 'call_0' }]);
    const deleteTicket = createTool({ id: 'delete_ticket', description: 'Delete a ticket by id.', inputSchema: z.object({ id: z.string() }), requireApproval: true, execute: deleteBody });
    const agent = new MastraAgent({ id: 'native', name: 'Native', instructions: 'Delete tickets.', model: model as never, tools: { delete_ticket: deleteTicket } });
    const mastra = new Mastra({ agents: { native: agent }, storage: new LibSQLStore({ id: 'native', url: `file:${join(dir, 'mastra.db')}` }), logger: false });
    const native = mastra.getAgent('native');
    return async (i) => {
      await drain(await native.stream('Delete t3.', { runId: `native-${i}` }));
      await drain(await native.approveToolCall({ runId: `native-${i}`, toolCallId: 'call_0' }));
    };
  }
  if (sdk === 'openai-agents') {
    return async () => {
      const model = new OneTurnModel([{ tool: 'delete_ticket', args: { id: 't3' }, callId: 'call_0' }]);
      const deleteTicket = openaiTool({ name: 'delete_ticket', description: 'Delete a ticket by id.', parameters: z.object({ id: z.string() }), needsApproval: true, execute: deleteBody });
      const agent = new OpenAIAgent({ name: 'Native', instructions: 'Delete tickets.', tools: [deleteTicket], model });
      const paused = await runOpenAI(agent, 'Delete t3.');
      const state = await RunState.fromString(agent, paused.state.toString());
      for (const item of state.getInterruptions()) state.approve(item);
      await runOpenAI(agent, state);
    };
  }
  const api = env.MESSAGES_API ?? '';
  const server = () => createSdkMcpServer({ name: 'tickets', tools: [claudeTool('delete_ticket', 'Delete a ticket by id.', { id: z.string() }, async (args) => ({ content: [{ type: 'text', text: await deleteBody(args) }] }))] });
  return async () => {
    const options = {
      env: cliEnv(api, join(dir, 'cli')),
      cwd: dir,
      settingSources: [],
      tools: [],
      permissionMode: 'default' as const,
      mcpServers: { tickets: server() },
      canUseTool: async (_name: string, input: Record<string, unknown>) => ({ behavior: 'allow' as const, updatedInput: input }),
    };
    let release = () => {};
    const ended = new Promise<void>((resolve) => (release = resolve));
    async function* prompt(): AsyncGenerator<SDKUserMessage> {
      yield { type: 'user', message: { role: 'user', content: claudeScript(['delete_ticket', { id: 't3' }]) }, parent_tool_use_id: null, session_id: '' };
      await ended;
    }
    for await (const message of query({ prompt: prompt(), options })) if (message.type === 'result') release();
  };
}

function crossgateTrip(sdk: Sdk): Trip {
  const messagesApi = env.MESSAGES_API ? { baseUrl: env.MESSAGES_API, recordPath: '', requests: () => [], stop: async () => {} } : undefined;
  const options = { client, dir: join(work, `crossgate-${sdk}`), body: () => (deleted.push('t3'), 'deleted ticket t3'), ...(messagesApi ? { messagesApi } : {}) };
  if (sdk === 'claude-agent-sdk') {
    const agent = scriptedAgent(sdk, PLAN, { ...options, hold: 60 });
    return async (i) => {
      const stop = approving(agent.framework);
      try {
        const outcome = await agent.run(`bench-${i}`);
        if (outcome.status !== 'finished') throw new Error('the held call was not decided inline');
      } finally {
        await stop();
      }
    };
  }
  const agent = scriptedAgent(sdk, PLAN, options);
  return async (i) => {
    const parked = await agent.run(`bench-${sdk}-${i}`);
    if (parked.status !== 'parked') throw new Error(`${sdk} did not park`);
    for (const id of parked.requestIds) await approve(id);
    const done = await agent.resume(parked.parkedRun);
    if (done.status !== 'finished') throw new Error(`${sdk} did not finish`);
  };
}

async function drain(output: { fullStream: AsyncIterable<unknown> }): Promise<void> {
  for await (const _chunk of output.fullStream) {
    // read to the end: the tool runs while the stream is read
  }
}

const results: Record<string, { native: number[]; crossgate: number[] }> = {};
for (const sdk of sdks) {
  const sides: Record<'native' | 'crossgate', Trip> = { native: nativeTrip(sdk), crossgate: crossgateTrip(sdk) };
  const samples = { native: [] as number[], crossgate: [] as number[] };
  for (let i = 0; i < warmup + trips; i++) {
    // Alternate which side goes first, so neither always runs on a warmer process.
    for (const side of i % 2 === 0 ? (['native', 'crossgate'] as const) : (['crossgate', 'native'] as const)) {
      const before = deleted.length;
      const start = performance.now();
      await sides[side](i);
      const seconds = (performance.now() - start) / 1000;
      if (deleted.length !== before + 1) throw new Error(`${sdk} ${side}: the tool ran ${deleted.length - before} times, not once`);
      if (i >= warmup) samples[side].push(seconds);
    }
  }
  results[sdk] = samples;
}
console.log(JSON.stringify(results));
// The CLI and LibSQL keep handles open; the measurement is done.
process.exit(0);

export type { JsonObject };
