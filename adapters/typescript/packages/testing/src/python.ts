/** The Python side of the tests: the interpreter that has crossgate, its CLI, and the helper script. */

import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** `$CROSSGATE_PYTHON` (the pytest hook sets it to its own interpreter), else `python3` on PATH. */
export function pythonExecutable(): string {
  return process.env.CROSSGATE_PYTHON || 'python3';
}

const HELPER = fileURLToPath(new URL('../python/helper.py', import.meta.url));

/** Run operations of `python/helper.py` in one Python process; their results in order. */
export function pythonOps<T = Record<string, string>>(ops: object[]): T[] {
  const done = spawnSync(pythonExecutable(), [HELPER], { input: JSON.stringify(ops), encoding: 'utf8' });
  if (done.status !== 0) throw new Error(`python helper failed (${done.status}): ${done.stderr || done.error}`);
  return JSON.parse(done.stdout) as T[];
}

/** `pythonOps` in a child process the event loop does not wait on (a live gate may be waiting meanwhile). */
export function pythonOpsAsync<T = Record<string, string>>(ops: object[]): Promise<T[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(pythonExecutable(), [HELPER], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (status) => {
      if (status !== 0) reject(new Error(`python helper failed (${status}): ${stderr}`));
      else resolve(JSON.parse(stdout) as T[]);
    });
    child.stdin.end(JSON.stringify(ops));
  });
}

export interface Completed {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** This process's environment with `overrides` applied; an override of '' removes the variable. */
export function environment(overrides: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const [name, value] of Object.entries(overrides)) {
    if (value === '') delete env[name];
    else env[name] = value;
  }
  return env;
}

/** Run the `crossgate` CLI (`python -m crossgate.cli ...`) as its own process. */
export function crossgateCli(args: string[], env: Record<string, string> = {}): Promise<Completed> {
  return new Promise((resolve, reject) => {
    const child = spawn(pythonExecutable(), ['-m', 'crossgate.cli', ...args], {
      env: environment(env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}
