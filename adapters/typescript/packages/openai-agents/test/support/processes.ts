/** Run `agent-process.js` as its own Node process against a live server; its one JSON line, parsed. */

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import type { LiveServer } from '@crossgate/testing';

const SCRIPT = fileURLToPath(new URL('./agent-process.js', import.meta.url));

export type ProcessResult = Record<string, unknown>;

export function agentProcess(server: LiveServer, tickets: string, ...args: string[]): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SCRIPT, ...args], {
      env: { ...process.env, ...server.agentEnv, TICKETS: tickets },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (status) => {
      const line = stdout.trim().split('\n').at(-1) ?? '';
      if (status !== 0 || !line) reject(new Error(`agent process ${args.join(' ')} exited ${status}: ${stderr}`));
      else resolve(JSON.parse(line) as ProcessResult);
    });
  });
}
