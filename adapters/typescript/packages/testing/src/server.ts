/**
 * A live `crossgate serve` on 127.0.0.1 for the tests: SQLite in a temporary folder, one reviewer and
 * two agent credentials in a tokens file, the policy given as YAML, and (unless `authority: false`) the
 * authority's keyring, so the server signs every decision and standing rule it records.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { AgentClient, type ApprovalRequest, type ClientOptions, type JsonObject, type Remember } from '@crossgate/client';

import { makeKeyring } from './keyring.js';
import { crossgateCli, environment, pythonExecutable, type Completed } from './python.js';

// A test's gates remember state heads in a folder of the test process's own, never the user's
// ~/.local/state (`$CROSSGATE_HEAD_DIR`, which the gates' own processes inherit).
if (!process.env.CROSSGATE_HEAD_DIR) {
  const heads = mkdtempSync(join(tmpdir(), 'crossgate-heads-'));
  process.env.CROSSGATE_HEAD_DIR = heads;
  process.once('exit', () => rmSync(heads, { recursive: true, force: true }));
}

export const REVIEWER = 'alice';
export const REVIEWER_TOKEN = 'alice-reviewer-token-0123456789';
export const AGENT = 'ts-agent';
export const AGENT_TOKEN = 'ts-agent-token-0123456789abcdef';
export const OTHER_AGENT = 'other-agent';
export const OTHER_AGENT_TOKEN = 'other-agent-token-0123456789abc';

/** The seed policy: every delete goes to a person. */
export const SEED_POLICY = `version: 1
default: allow
rules:
  - name: review-ticket-deletes
    verdict: ask
    tool: delete_ticket
    reason: Deleting a ticket cannot be undone.
  - name: no-dropping-tables
    verdict: deny
    tool: execute_sql
    where:
      - arg: query
        regex: '(?i)\\bdrop\\s+table\\b'
    reason: Dropping tables is not allowed. Do not retry.
`;

/** A reviewer's answer, as the reviewer API takes it. */
export type DecisionBody = (
  | { kind: 'approve' }
  | { kind: 'edit'; args: JsonObject }
  | { kind: 'reject'; message: string }
  | { kind: 'respond'; content: string }
) & { remember?: Partial<Remember>; note?: string; fingerprint?: string };

export interface LiveServer {
  readonly url: string;
  readonly dir: string;
  readonly db: string;
  readonly policyFile: string;
  /** The authority's public key(s) as pin text (`crossgate keys show`); null for a server that signs nothing. */
  readonly pin: string | null;
  /** The authority's key directory (the private key is in it); null for a server that signs nothing. */
  readonly authorityDir: string | null;
  /**
   * The environment a separate agent process needs: the server's address, an agent token and the
   * authority's public key to pin (`CROSSGATE_AUTHORITY_PUBKEY`); nothing of the store or the private key.
   */
  readonly agentEnv: Record<string, string>;
  client(options?: Partial<ClientOptions>): AgentClient;
  /** Decide through the reviewer API, as the page does. */
  decide(requestId: string, decision: DecisionBody): Promise<ApprovalRequest>;
  /**
   * Run the `crossgate` CLI on this server's database with no credentials (as anyone on the host may):
   * reading works; deciding is refused.
   */
  cli(...args: string[]): Promise<Completed>;
  /** `crossgate ARGS --server URL` with the reviewer's token in `$CROSSGATE_TOKEN`: decides through the server. */
  reviewerCli(...args: string[]): Promise<Completed>;
  /** `crossgate --db DB ARGS --authority-dir DIR`: the key holder decides on the database, signed as an operator. */
  operatorCli(...args: string[]): Promise<Completed>;
  /** A reviewer API call. */
  reviewerFetch(path: string, init?: RequestInit): Promise<Response>;
  /**
   * Stop the server process and start a fresh one on the same database, folder and port; `whileStopped`
   * runs in between (a writer of the store at work while no server signs).
   */
  restart(whileStopped?: () => Promise<unknown> | unknown): Promise<void>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

export interface ServerOptions {
  /** The policy YAML (the seed policy by default). */
  policy?: string;
  /** Give the server an authority key to sign with (the default); false: it signs nothing. */
  authority?: boolean;
  /** Top-level settings for the tokens file, e.g. `state_head_every_seconds = 1`. */
  settings?: string;
}

/** Start `crossgate serve` and wait until it answers; `stop()` ends it and removes its folder. */
export async function startServer(options: ServerOptions = {}): Promise<LiveServer> {
  const dir = mkdtempSync(join(tmpdir(), 'crossgate-ts-'));
  const db = join(dir, 'queue.db');
  const policyFile = join(dir, 'policy.yaml');
  const tokens = join(dir, 'tokens.toml');
  writeFileSync(policyFile, options.policy ?? SEED_POLICY);
  const authorityDir = options.authority === false ? null : join(dir, 'authority');
  const pin = authorityDir === null ? null : makeKeyring(authorityDir);
  writeFileSync(
    tokens,
    (options.settings ? `${options.settings}\n\n` : '') +
      `[[reviewers]]\nname = "${REVIEWER}"\ntoken = "${REVIEWER_TOKEN}"\n\n` +
      `[[agents]]\nname = "${AGENT}"\ntoken = "${AGENT_TOKEN}"\n\n` +
      `[[agents]]\nname = "${OTHER_AGENT}"\ntoken = "${OTHER_AGENT_TOKEN}"\n`,
  );
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const launch = () => spawnServer({ url, port, dir, db, policyFile, tokens, authorityDir });
    const child = launch();
    try {
      await child.up;
      return liveServer({ url, dir, db, policyFile, child: child.process, pin, authorityDir, launch });
    } catch (error) {
      lastError = error;
      child.process.kill('SIGTERM');
    }
  }
  rmSync(dir, { recursive: true, force: true });
  throw lastError;
}

interface Launch {
  url: string;
  port: number;
  dir: string;
  db: string;
  policyFile: string;
  tokens: string;
  authorityDir: string | null;
}

interface Launched {
  process: ChildProcess;
  /** Settles when the server answers, or fails when it exits or does not answer within 30 s. */
  up: Promise<void>;
}

function spawnServer(launch: Launch): Launched {
  const { url, port, dir, db, policyFile, tokens, authorityDir } = launch;
  const signing = authorityDir === null ? [] : ['--authority-dir', authorityDir];
  const child = spawn(
    pythonExecutable(),
    ['-m', 'crossgate.cli', '--db', db, '--policy', policyFile, 'serve', '--port', String(port), '--tokens', tokens, '--log-level', 'warning', ...signing],
    { stdio: ['ignore', 'ignore', 'pipe'], env: environment({ ...noCredentials(dir), CROSSGATE_TOKENS: '' }) },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return { process: child, up: waitUntilUp(url, child, () => stderr) };
}

async function waitUntilUp(url: string, child: ChildProcess, stderr: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`crossgate serve exited (${child.exitCode}): ${stderr()}`);
    try {
      const reply = await fetch(`${url}/api/health`, { headers: { authorization: `Bearer ${REVIEWER_TOKEN}` } });
      if (reply.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`crossgate serve did not answer at ${url} within 30 s: ${stderr()}`);
}

/**
 * What keeps the user's own credentials out of a test's processes (see `environment`): no token, key
 * directory or database from the environment, and a configuration home (where
 * `~/.config/crossgate/authority` would be) inside `dir`.
 */
function noCredentials(dir: string): Record<string, string> {
  // the server's first run writes its data directory and the default pin: never the real user's
  return {
    CROSSGATE_TOKEN: '',
    CROSSGATE_AUTHORITY_DIR: '',
    CROSSGATE_DB: '',
    XDG_CONFIG_HOME: join(dir, 'config'),
    XDG_DATA_HOME: join(dir, 'data'),
  };
}

interface Parts {
  url: string;
  dir: string;
  db: string;
  policyFile: string;
  child: ChildProcess;
  pin: string | null;
  authorityDir: string | null;
  launch: () => Launched;
}

async function ended(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5_000))]);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

function liveServer(parts: Parts): LiveServer {
  const { url, dir, db, policyFile, pin, authorityDir, launch } = parts;
  let child = parts.child;
  const bare = noCredentials(dir);
  const reviewerFetch = (path: string, init: RequestInit = {}) =>
    fetch(`${url}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${REVIEWER_TOKEN}`, 'content-type': 'application/json', ...(init.headers ?? {}) },
    });
  return {
    url,
    dir,
    db,
    policyFile,
    pin,
    authorityDir,
    agentEnv: { CROSSGATE_SERVER: url, CROSSGATE_AGENT_TOKEN: AGENT_TOKEN, ...(pin === null ? {} : { CROSSGATE_AUTHORITY_PUBKEY: pin }) },
    client: (options = {}) => new AgentClient({ baseUrl: url, token: AGENT_TOKEN, ...options }),
    async decide(requestId, decision) {
      const reply = await reviewerFetch(`/api/requests/${encodeURIComponent(requestId)}/decision`, {
        method: 'POST',
        body: JSON.stringify(decision),
      });
      const body = (await reply.json()) as ApprovalRequest;
      if (!reply.ok) throw new Error(`deciding ${requestId} failed: ${reply.status} ${JSON.stringify(body)}`);
      return body;
    },
    cli: (...args: string[]) => crossgateCli(['--db', db, '--policy', policyFile, ...args], bare),
    reviewerCli: (...args: string[]) => crossgateCli([...args, '--server', url], { ...bare, CROSSGATE_TOKEN: REVIEWER_TOKEN }),
    operatorCli: (...args: string[]) => {
      if (authorityDir === null) throw new Error('this server has no authority key to decide with');
      return crossgateCli(['--db', db, '--policy', policyFile, ...args, '--authority-dir', authorityDir], bare);
    },
    reviewerFetch,
    async restart(whileStopped) {
      await ended(child);
      await whileStopped?.();
      const next = launch();
      child = next.process;
      await next.up;
    },
    async stop() {
      await ended(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
