/** Run `agent-process.js` as its own Node process against a live server and the scripted Messages API. */

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import type { LiveServer } from '@crossgate/testing';

const SCRIPT = fileURLToPath(new URL('./agent-process.js', import.meta.url));

export interface World {
  server: LiveServer;
  messagesApi: string;
  tickets: string;
  cliRoot: string;
  work: string;
}

export function agentProcess(world: World, ...args: string[]): Promise<Record<string, unknown>> {
  const env = {
    ...process.env,
    ...world.server.agentEnv,
    MESSAGES_API: world.messagesApi,
    TICKETS: world.tickets,
    CLI_ROOT: world.cliRoot,
    WORK: world.work,
  };
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SCRIPT, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (status) => {
      const line = stdout.trim().split('\n').at(-1) ?? '';
      if (status !== 0 || !line.startsWith('{')) reject(new Error(`agent process ${args.join(' ')} exited ${status}: ${stderr.slice(-2000)}`));
      else resolve(JSON.parse(line) as Record<string, unknown>);
    });
  });
}
