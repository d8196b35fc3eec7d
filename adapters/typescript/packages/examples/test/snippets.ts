/**
 * The runnable snippets of the packages' READMEs: every ```js block, except one the line before marks
 * `<!-- not run: why -->`. A snippet runs as its own ES module with the server's address, an agent
 * token and the authority's key in its environment, while `runWithReviewer` approves whatever it asks.
 */

import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

import type { LiveServer } from '@crossgate/testing';

export interface Snippet {
  readonly pkg: string;
  readonly index: number;
  readonly code: string;
}

/** The publishable packages (not `private`) under `packages`, by folder name. */
export function publishable(packages: string): string[] {
  return readdirSync(packages).filter((name) => {
    const manifest = join(packages, name, 'package.json');
    return existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { private?: boolean }).private !== true;
  });
}

export function snippets(readme: string, pkg: string): Snippet[] {
  const found: Snippet[] = [];
  const lines = readFileSync(readme, 'utf8').split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== '```js') continue;
    const end = lines.indexOf('```', i + 1);
    if (!(lines[i - 1] ?? '').startsWith('<!-- not run')) found.push({ pkg, index: found.length, code: lines.slice(i + 1, end).join('\n') });
    i = end;
  }
  return found;
}

export interface Ran {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly decided: string[];
}

/** Run `file` with node in `cwd`, approving each request it leaves pending on `server`, until it exits. */
export async function runWithReviewer(server: LiveServer, file: string, cwd: string, extraEnv: Record<string, string> = {}, timeoutMs = 120_000): Promise<Ran> {
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...extraEnv, ...server.agentEnv };
  const child = spawn(process.execPath, [file], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  const decided: string[] = [];
  const deadline = Date.now() + timeoutMs;
  let status: number | null | undefined;
  void exited.then((code) => (status = code));
  while (status === undefined && Date.now() < deadline) {
    const { items } = await server.client().listRequests({ status: 'pending' });
    for (const request of items) {
      if (decided.includes(request.id)) continue;
      await server.decide(request.id, { kind: 'approve' });
      decided.push(request.id);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  if (status === undefined) child.kill('SIGKILL');
  return { status: await exited, stdout, stderr, decided };
}
