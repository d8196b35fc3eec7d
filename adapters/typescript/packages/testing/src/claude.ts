/**
 * The scripted Anthropic Messages API of `crossgate_claude.testing` (Python), run as its own process on
 * 127.0.0.1 for the real bundled CLI: a prompt line `CALL <tool> <json>` makes the model call that tool,
 * one call per model turn, then it ends its turn with FINAL_TEXT. Every request body is recorded as one
 * JSON line, so a test reads what any process's CLI sent.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { pythonExecutable } from './python.js';

export const FINAL_TEXT = 'All requested tool calls were answered.';

const SERVE = `
import sys
from pathlib import Path
from crossgate_claude.testing import MessagesAPI
api = MessagesAPI(record_path=Path(sys.argv[1])).start()
print(api.base_url, flush=True)
sys.stdin.read()
api.stop()
`;

export interface MessagesApi {
  readonly baseUrl: string;
  readonly recordPath: string;
  /** Every request body any CLI sent, in order. */
  requests(): Record<string, any>[];
  stop(): Promise<void>;
}

export async function startMessagesApi(dir: string): Promise<MessagesApi> {
  const recordPath = join(dir, 'messages-api.jsonl');
  const child: ChildProcess = spawn(pythonExecutable(), ['-c', SERVE, recordPath], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const baseUrl = await new Promise<string>((resolve, reject) => {
    child.stdout?.once('data', (chunk: Buffer) => resolve(chunk.toString().trim()));
    child.once('exit', (code) => reject(new Error(`the scripted Messages API exited (${code}): ${stderr}`)));
  });
  return {
    baseUrl,
    recordPath,
    requests: () =>
      existsSync(recordPath)
        ? readFileSync(recordPath, 'utf8').split('\n').filter((line) => line.trim()).map((line) => JSON.parse(line) as Record<string, any>)
        : [],
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.stdin?.end();
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 3_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

/** The environment that keeps the CLI offline and inside `root` (as `crossgate_claude.testing.cli_env`). */
export function cliEnv(baseUrl: string, root: string): Record<string, string> {
  const config = join(root, 'claude-config');
  const home = join(root, 'home');
  const tmp = join(root, 'tmp');
  for (const folder of [config, home, tmp]) mkdirSync(folder, { recursive: true });
  return {
    PATH: process.env.PATH ?? '',
    ANTHROPIC_BASE_URL: baseUrl,
    ANTHROPIC_API_KEY: 'test',
    DISABLE_TELEMETRY: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
    DISABLE_ERROR_REPORTING: '1',
    CLAUDE_CONFIG_DIR: config,
    HOME: home,
    TMPDIR: tmp,
    IS_SANDBOX: '1',
  };
}

/** A prompt that scripts these calls, one per model turn. */
export function calls(...lines: [string, Record<string, unknown>][]): string {
  return lines.map(([name, args]) => `CALL ${name} ${JSON.stringify(args)}`).join('\n');
}

export interface Told {
  readonly tool: string;
  readonly input: Record<string, unknown>;
  readonly isError: boolean;
  readonly text: string;
}

/** What the model was told for each of its tool calls, in order (calls with no result yet are left out). */
export function told(bodies: Record<string, any>[], script?: string): Told[] {
  const uses = new Map<string, { name: string; input: Record<string, unknown> }>();
  const results = new Map<string, { is_error?: boolean; content?: unknown }>();
  for (const body of bodies) {
    if (script !== undefined && !firstPrompt(body).includes(script)) continue;
    for (const message of body.messages ?? []) {
      if (!Array.isArray(message.content)) continue;
      for (const block of message.content) {
        if (message.role === 'assistant' && block.type === 'tool_use' && !uses.has(block.id)) uses.set(block.id, block);
        if (message.role === 'user' && block.type === 'tool_result' && !results.has(block.tool_use_id)) results.set(block.tool_use_id, block);
      }
    }
  }
  return [...uses.entries()].flatMap(([id, use]) => {
    const result = results.get(id);
    if (result === undefined) return [];
    return [{ tool: use.name, input: use.input, isError: Boolean(result.is_error), text: resultText(result.content) }];
  });
}

function resultText(content: unknown): string {
  if (Array.isArray(content)) return content.map((c: { text?: string }) => c.text ?? '').join('');
  return String(content ?? '');
}

function firstPrompt(body: Record<string, any>): string {
  const first = (body.messages ?? []).find((m: { role: string }) => m.role === 'user');
  if (!first) return '';
  if (typeof first.content === 'string') return first.content;
  return (first.content as { type: string; text?: string }[]).filter((b) => b.type === 'text').map((b) => b.text ?? '').join('\n');
}
