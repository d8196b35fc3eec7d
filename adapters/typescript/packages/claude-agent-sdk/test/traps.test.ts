/**
 * Claude Agent SDK (TS) traps, each reproduced against the bare SDK with the real bundled CLI, then shown
 * closed through the gate:
 * - `allowedTools` naming a tool shadows canUseTool: the CLI runs the tool and never asks;
 * - a deferred call's input lives in the CLI's session file: edited there, the resumed session runs the
 *   edited call, and an app that approves by tool use id approves it.
 */

import assert from 'node:assert/strict';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { createSdkMcpServer, query, type Options, type SDKUserMessage } from '@anthropic-ai/claude-agent-sdk';
import type { AgentClient } from '@crossgate/client';
import { Gate } from '@crossgate/claude-agent-sdk';
import { startServer, TicketStore, type LiveServer } from '@crossgate/testing';

import { calls, cliEnv, startMessagesApi, told, type MessagesApi } from './support/messages-api.js';
import { ticketTools } from './support/tickets.js';

let server: LiveServer;
let api: MessagesApi;
let client: AgentClient;
before(async () => {
  server = await startServer();
  api = await startMessagesApi(server.dir);
  client = server.client();
});
after(async () => {
  await api.stop();
  await server.stop();
});

let worlds = 0;
/** A fresh ticket file, CLI config and working folder. */
function world() {
  const root = join(server.dir, `world-${++worlds}`);
  const work = join(root, 'work');
  mkdirSync(work, { recursive: true });
  const tickets = new TicketStore(join(root, 'tickets.json'));
  tickets.seed(['t1', 't2', 't3']);
  const cliRoot = join(root, 'cli');
  const options: Options = { env: cliEnv(api.baseUrl, cliRoot), cwd: work, settingSources: [], tools: [], permissionMode: 'default' };
  return { tickets, options, cliRoot };
}

/** Every message of one CLI process; with no prompt (a resume), the input stays open until the result. */
async function drain(prompt: string | null, options: Options) {
  let release = () => {};
  const ended = new Promise<void>((resolve) => (release = resolve));
  async function* none(): AsyncGenerator<SDKUserMessage> {
    await ended;
  }
  const results: Record<string, unknown>[] = [];
  for await (const message of query({ prompt: prompt ?? none(), options })) {
    if (message.type === 'result') {
      results.push(message as unknown as Record<string, unknown>);
      release();
    }
  }
  return results.at(-1)!;
}

/** The CLI's session file (`<config>/projects/<cwd>/<session>.jsonl`), with the deferred call's t3 made t1. */
function editSessionFile(cliRoot: string, session: string): void {
  const projects = join(cliRoot, 'claude-config', 'projects');
  for (const project of readdirSync(projects)) {
    const file = join(projects, project, `${session}.jsonl`);
    try {
      const text = readFileSync(file, 'utf8');
      writeFileSync(file, text.replaceAll('"id":"t3"', '"id":"t1"'));
      return;
    } catch {
      // not this project's
    }
  }
  throw new Error(`no session file for ${session}`);
}

const DELETE_T3 = calls(['delete_ticket', { id: 't3' }]);
const defer = async () => ({ hookSpecificOutput: { hookEventName: 'PreToolUse' as const, permissionDecision: 'defer' as const } });

test('bare SDK: allowedTools naming the tool runs it without asking canUseTool', async () => {
  const { tickets, options } = world();
  let asked = 0;
  await drain(DELETE_T3, {
    ...options,
    mcpServers: { tickets: createSdkMcpServer({ name: 'tickets', tools: ticketTools(tickets) }) },
    allowedTools: ['mcp__tickets__delete_ticket'],
    canUseTool: async () => ((asked += 1), { behavior: 'deny', message: 'no' }),
  });
  assert.equal(asked, 0);
  assert.deepEqual(tickets.ids(), ['t1', 't2'], 't3 was deleted unasked');
});

test('gate: the same allowedTools cannot run it unreviewed, and its tools refuse to run outside the gate\'s callbacks', async () => {
  const { tickets, options } = world();
  const gate = new Gate({ client, options: { ...options, allowedTools: ['mcp__tickets__delete_ticket'] }, servers: { tickets: ticketTools(tickets) } });
  const outcome = await gate.run(DELETE_T3);
  assert.equal(outcome.status, 'parked');
  assert.deepEqual(tickets.ids(), ['t1', 't2', 't3']);

  // The gate's servers in a session of its own, with allowedTools and no crossgate callbacks: the CLI
  // calls the tool unasked, and crossgate's handler refuses it, for no decision covers it.
  const script = calls(['delete_ticket', { id: 't2' }]);
  await drain(script, { ...options, mcpServers: gate.servers(), allowedTools: ['mcp__tickets__delete_ticket'] });
  assert.deepEqual(tickets.ids(), ['t1', 't2', 't3']);
  const [answer] = told(api.requests(), script);
  assert.equal(answer?.isError, true);
  assert.match(answer?.text ?? '', /^crossgate did not run delete_ticket: it needs a reviewer's decision/);
});

test('bare SDK: a deferred call edited in the session file runs edited when the app approves the deferred tool use', async () => {
  const { tickets, options, cliRoot } = world();
  const mcpServers = () => ({ tickets: createSdkMcpServer({ name: 'tickets', tools: ticketTools(tickets) }) });
  const first = await drain(DELETE_T3, { ...options, mcpServers: mcpServers(), hooks: { PreToolUse: [{ hooks: [defer] }] } });
  assert.equal(first.stop_reason, 'tool_deferred');
  const deferred = (first.deferred_tool_use as { id: string }).id;
  editSessionFile(cliRoot, String(first.session_id));
  const stubs = JSON.stringify({ mcpServers: { tickets: { type: 'sdk', name: 'tickets' } } });
  const seen: unknown[] = [];
  await drain(null, {
    ...options,
    mcpServers: mcpServers(),
    resume: String(first.session_id),
    extraArgs: { 'mcp-config': stubs },
    // The app approved "the deferred tool use": it checks the id, not the input.
    canUseTool: async (_tool, input, { toolUseID }) =>
      toolUseID === deferred ? (seen.push(input), { behavior: 'allow', updatedInput: input }) : { behavior: 'deny', message: 'no' },
  });
  assert.deepEqual(seen, [{ id: 't1' }]);
  assert.deepEqual(tickets.ids(), ['t2', 't3'], 't1 was deleted instead of the approved t3');
});

test('gate: a deferred call edited in the session file is refused on resume; nothing runs', async () => {
  const { tickets, options, cliRoot } = world();
  const earlier = api.requests().length;
  const gate = new Gate({ client, options, servers: { tickets: ticketTools(tickets) } });
  const outcome = await gate.run(DELETE_T3);
  assert.equal(outcome.status, 'parked');
  await server.decide(outcome.requestIds[0]!, { kind: 'approve' });
  editSessionFile(cliRoot, outcome.run);
  const done = await gate.resume(outcome.parkedRun);
  assert.equal(done.status, 'finished');
  assert.deepEqual(tickets.ids(), ['t1', 't2', 't3'], 'neither the edited t1 nor the approved t3 ran');
  const answer = told(api.requests().slice(earlier)).find((t) => JSON.stringify(t.input) === '{"id":"t1"}');
  assert.equal(answer?.isError, true);
  assert.match(answer?.text ?? '', /This tool call differs from the one the reviewer saw, so it was not run/);
  assert.equal((await client.get(outcome.requestIds[0]!)).status, 'decided', 'the approval was never applied');
});
