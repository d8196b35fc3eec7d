/**
 * The LangChain.js and LangGraph.js test world: a scripted chat model (LangChain's own `BaseChatModel`
 * interface, no network) that proposes tool calls while it has read no tool result, then answers with
 * the results it read, and the seed scenario in three processes. A subpath of its own, so the other
 * packages' tests need no LangChain.
 */

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';

import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, type BaseMessage, ToolMessage } from '@langchain/core/messages';
import type { ChatResult } from '@langchain/core/outputs';

import type { LiveServer } from './server.js';
import { TicketStore } from './tickets.js';

export const REJECTION = 'Keep t1 for the audit. Do not retry.';

export interface ScriptedCall {
  readonly id: string;
  readonly name: string;
  readonly args: Record<string, unknown>;
}

/** What the model read as tool results, by tool call id. */
export function toolResults(messages: readonly BaseMessage[]): Record<string, { content: string; status: string | undefined }> {
  const found: Record<string, { content: string; status: string | undefined }> = {};
  for (const m of messages) {
    if (ToolMessage.isInstance(m)) found[m.tool_call_id] = { content: String(m.content), status: (m as ToolMessage).status };
  }
  return found;
}

/** Proposes `calls` while it has read no tool result; then answers with the results it read. */
export class ScriptedModel extends BaseChatModel {
  readonly prompts: BaseMessage[][] = [];
  constructor(readonly calls: readonly ScriptedCall[]) {
    super({});
  }

  _llmType(): string {
    return 'scripted';
  }

  override bindTools(): this {
    return this;
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    this.prompts.push(messages);
    const read = toolResults(messages);
    const message =
      Object.keys(read).length === 0
        ? new AIMessage({ content: '', tool_calls: this.calls.map((c) => ({ ...c, type: 'tool_call' as const })) })
        : new AIMessage({ content: `I read: ${JSON.stringify(read)}` });
    return { generations: [{ text: String(message.content), message }] };
  }
}

/** Run `script` with node as its own process (the server's address, an agent token and the key to pin; nothing of the store). */
export function agentProcess(server: LiveServer, script: string, args: string[]): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const env = { PATH: process.env.PATH ?? '', ...server.agentEnv };
    const child = spawn(process.execPath, [script, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('close', (status) => (status === 0 ? resolve(JSON.parse(out) as Record<string, unknown>) : reject(new Error(`agent exited ${status}: ${err}`))));
  });
}

/**
 * The seed scenario in three processes: `script park <tickets> <checkpoints>` parks (t3 and t1), a
 * reviewer's token decides over the API (approve t3, reject t1 with `REJECTION`), `script resume ...`
 * resumes; t3 is deleted once, t1 kept, the model reads the rejection verbatim, a second resume runs nothing.
 */
export async function seedScenario(server: LiveServer, script: string, requestFramework: string): Promise<void> {
  const tickets = new TicketStore(join(server.dir, 'tickets.json'));
  tickets.seed();
  const checkpoints = join(server.dir, 'checkpoints.db');
  const parkedOut = (await agentProcess(server, script, ['park', tickets.path, checkpoints])) as {
    outcome: { status: string; parkedRun: string; requestIds: string[] };
    ids: { t3: string; t1: string };
    tickets: string[];
  };
  assert.equal(parkedOut.outcome.status, 'parked');
  assert.deepEqual([...parkedOut.outcome.requestIds].sort(), [parkedOut.ids.t3, parkedOut.ids.t1].sort());
  assert.deepEqual(parkedOut.tickets, ['t1', 't2', 't3']);
  assert.equal(tickets.deleteRuns(), 0);

  const request = await server.client().get(parkedOut.ids.t3);
  assert.equal(request.call.framework, requestFramework);
  assert.deepEqual(request.call.args, { id: 't3' });
  const parkedRun = await server.client().getParked(parkedOut.outcome.parkedRun);
  assert.equal(parkedRun.framework, 'langgraph-ts');

  const approved = await server.reviewerCli('approve', parkedOut.ids.t3);
  assert.equal(approved.status, 0, approved.stderr);
  const rejected = await server.reviewerCli('reject', parkedOut.ids.t1, '--message', REJECTION);
  assert.equal(rejected.status, 0, rejected.stderr);
  const decided = await server.client().get(parkedOut.ids.t3);
  assert.equal(decided.decision?.reviewer, 'alice');
  assert.equal(decided.signatures.length, 1, 'the server signs the decision');

  const resumed = (await agentProcess(server, script, ['resume', tickets.path, checkpoints, parkedOut.outcome.parkedRun])) as {
    status: string;
    read: Record<string, { content: string; status: string }>;
    tickets: string[];
  };
  assert.equal(resumed.status, 'finished');
  assert.deepEqual(resumed.read.call_t3, { content: 'deleted ticket t3', status: 'success' });
  assert.deepEqual(resumed.read.call_t1, { content: REJECTION, status: 'error' });
  assert.deepEqual(resumed.tickets, ['t1', 't2']);
  assert.equal(tickets.deleteRuns('t3'), 1);
  assert.equal(tickets.deleteRuns('t1'), 0);

  await assert.rejects(agentProcess(server, script, ['resume', tickets.path, checkpoints, parkedOut.outcome.parkedRun]), /resumed/);
  assert.equal(tickets.deleteRuns(), 1, 'a second resume runs nothing');
}
