/** `Gate`: a crossgate review in front of every tool call of a Claude Agent SDK (TS) session. */

import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';

import {
  query,
  type HookCallbackMatcher,
  type HookEvent,
  type Options,
  type SdkMcpToolDefinition,
  type SDKResultMessage,
  type SDKUserMessage,
} from '@anthropic-ai/claude-agent-sdk';
import {
  AdapterError,
  type AgentClient,
  type AuthorityPin,
  ConfigurationError,
  finished,
  isOpen,
  type JsonObject,
  parked,
  type ParkedRun,
  resumeLeased,
  type RunOutcome,
  verifiedClient,
} from '@crossgate/client';

import { Binding } from './binding.js';
import { isObject, type SessionScope } from './calls.js';
import { FRAMEWORK } from './capabilities.js';
import { gatedServer, type GateCore } from './handlers.js';

export const TOOL_DEFERRED = 'tool_deferred';

export interface GateOptions {
  client: AgentClient;
  /** The session options every run starts from: no `canUseTool` of its own and no SDK MCP servers. */
  options?: Options;
  /** Tools crossgate runs itself, as SDK MCP servers it builds for each session: `{ tickets: [tool(...)] }`. */
  servers?: Record<string, readonly SdkMcpToolDefinition<any>[]>;
  /** The agent's name on every call (the main thread has none by default). */
  agent?: string;
  /** The app's context for every call of the gate's runs (policy `context:` conditions test it). */
  context?: JsonObject;
  /**
   * The authority's public key(s) to verify decisions and standing rules with (TrustedKeys, a PublicKey,
   * pin text or a pin file); default `$CROSSGATE_AUTHORITY_PUBKEY` / `$CROSSGATE_AUTHORITY_PUBKEY_FILE`.
   * What does not verify runs nothing. Without any, the gate runs unverified and warns once.
   */
  authority?: AuthorityPin;
  /** Seconds the hook holds the CLI waiting for a decision before deferring the call; 0 defers at once. */
  hold?: number;
  /** Seconds a resumed session may take to ask again about its deferred call before the resume fails. */
  resumeTimeout?: number;
  leaseSeconds?: number;
  owner?: string;
}

export interface RunOptions {
  /** Who the run acts for: the server refuses that reviewer's decisions on its requests. */
  requestedBy?: string;
  /** Added to the gate's context for this run; parked with a deferred call. */
  callContext?: JsonObject;
  /** Seconds to wait, once parked, for the decision and resume in this call; 0 returns parked at once. */
  wait?: number;
}

/**
 * Runs Claude sessions behind crossgate: `run` returns finished or parked; `resume(parkedRun)` continues
 * a deferred session once its request is decided, once, from any process with the same gate options.
 */
export class Gate {
  readonly framework = FRAMEWORK;
  readonly owner: string;
  readonly #options: GateOptions;
  readonly #core: GateCore;
  readonly #servers: Record<string, readonly SdkMcpToolDefinition<any>[]>;

  constructor(options: GateOptions) {
    const base = options.options ?? {};
    if (base.canUseTool) throw new ConfigurationError('these options already have a canUseTool callback; crossgate supplies its own');
    if (base.permissionPromptToolName) throw new ConfigurationError('permissionPromptToolName cannot be combined with crossgate\'s canUseTool');
    if (base.hooks?.PermissionRequest?.length) {
      // The CLI races PermissionRequest hooks against canUseTool: an allowing hook would run unapproved calls.
      throw new ConfigurationError('PermissionRequest hooks would race crossgate\'s canUseTool; remove them');
    }
    for (const [name, server] of Object.entries(base.mcpServers ?? {})) {
      if (server.type === 'sdk') {
        throw new ConfigurationError(
          `SDK MCP server '${name}' runs its tools in this process without crossgate's check; give its tools as Gate({ servers })`,
        );
      }
    }
    const servers = options.servers ?? {};
    for (const name of Object.keys(servers)) {
      if (base.mcpServers && name in base.mcpServers) throw new ConfigurationError(`MCP server '${name}' is given twice`);
    }
    if ((options.hold ?? 0) < 0) throw new ConfigurationError('hold cannot be negative');
    this.#options = options;
    this.#servers = servers;
    this.#core = { client: verifiedClient(options.client, options.authority), calls: new Map() };
    this.owner = options.owner ?? `${FRAMEWORK}:${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  }

  /** The SDK MCP servers crossgate builds, for a session of your own: their tools still run only through the check. */
  servers(): NonNullable<Options['mcpServers']> {
    return Object.fromEntries(Object.entries(this.#servers).map(([name, tools]) => [name, gatedServer(this.#core, name, tools)]));
  }

  /** Run one prompt; finish, or park when a call is deferred (and, within `wait`, resume it here once decided). */
  async run(prompt: string, options: RunOptions = {}): Promise<RunOutcome<SDKResultMessage>> {
    const scope: SessionScope = {
      agent: this.#options.agent ?? null,
      requestedBy: options.requestedBy ?? null,
      context: { ...(this.#options.context ?? {}), ...(options.callContext ?? {}) },
    };
    const binding = this.#binding(scope);
    const result = await this.#turn(this.#sessionOptions(binding), binding, prompt);
    return this.#outcome(result, binding, options.wait ?? 0);
  }

  /**
   * Continue a parked session once its request is decided: the CLI resumes it with no new prompt, asks
   * again about the deferred call, and canUseTool answers from the decision. A run still pending after
   * `wait` seconds (0: at once) comes back parked unchanged; a run resumed before, or being resumed elsewhere, is refused with ConflictError.
   */
  async resume(parkedRun: string, options: { wait?: number } = {}): Promise<RunOutcome<SDKResultMessage>> {
    const client = this.#core.client;
    const stored = await client.getParked(parkedRun);
    if (stored.framework !== FRAMEWORK) throw new ConfigurationError(`parked run ${stored.id} belongs to ${stored.framework}, not ${FRAMEWORK}`);
    await client.expireOverdue();
    const deadline = Date.now() + (options.wait ?? 0) * 1000;
    if (stored.status === 'parked' && !(await decidedBy(client, stored, deadline))) return parked(stored.run, stored.id, stored.request_ids);
    return resumeLeased(client, stored.id, {
      owner: this.owner,
      leaseSeconds: this.#options.leaseSeconds ?? 600,
      body: async (claimed) => {
        const state = parseState(claimed.state, claimed.id);
        const scope: SessionScope = {
          agent: state.agent,
          requestedBy: typeof claimed.metadata.requested_by === 'string' ? claimed.metadata.requested_by : null,
          context: state.context,
        };
        const binding = this.#binding(scope, state.session_id, state.tool_use_id);
        const sessionOptions = this.#sessionOptions(binding, state.session_id);
        if (sessionOptions.cwd === undefined && state.cwd) sessionOptions.cwd = state.cwd;
        const result = await this.#turn(sessionOptions, binding, null);
        return this.#outcome(result, binding, Math.max(0, (deadline - Date.now()) / 1000));
      },
    });
  }

  #binding(scope: SessionScope, session?: string, expect?: string): Binding {
    const base = this.#options.options ?? {};
    return new Binding(this.#core, {
      scope,
      servers: [...Object.keys(base.mcpServers ?? {}), ...Object.keys(this.#servers)],
      gatedServers: new Set(Object.keys(this.#servers)),
      hold: this.#options.hold ?? 0,
      ...(session === undefined ? {} : { session }),
      ...(expect === undefined ? {} : { expect }),
    });
  }

  /** The base options with crossgate's callbacks, its servers, and (for a resume) the session to resume. */
  #sessionOptions(binding: Binding, resume?: string): Options {
    const base = this.#options.options ?? {};
    const hold = this.#options.hold ?? 0;
    const hooks: Partial<Record<HookEvent, HookCallbackMatcher[]>> = { ...(base.hooks ?? {}) };
    // A hook that throws or times out lets the call go ahead unless its matcher says block.
    hooks.PreToolUse = [{ hooks: [binding.preToolUse], timeout: 30 + hold, onFailure: 'block' }, ...(base.hooks?.PreToolUse ?? [])];
    hooks.PostToolUse = [...(base.hooks?.PostToolUse ?? []), { hooks: [binding.postToolUse], timeout: 30 }];
    const options: Options = {
      ...base,
      permissionMode: base.permissionMode ?? 'default', // omitted, a session may start in 'auto' (a classifier)
      mcpServers: { ...(base.mcpServers ?? {}), ...this.servers() },
      canUseTool: binding.canUseTool,
      hooks,
    };
    if (resume !== undefined) {
      options.resume = resume;
      // The SDK hands its in-process servers to a resumed CLI only in the initialize request, after the
      // CLI has tried the deferred call (it then ends tool_deferred_unavailable); naming them on the
      // command line too makes the CLI wait for them.
      if (base.extraArgs?.['mcp-config'] !== undefined) throw new ConfigurationError("extraArgs 'mcp-config' is crossgate's on a resume");
      const stubs = Object.fromEntries(Object.keys(this.#servers).map((name) => [name, { type: 'sdk', name }]));
      if (Object.keys(stubs).length) options.extraArgs = { ...(base.extraArgs ?? {}), 'mcp-config': JSON.stringify({ mcpServers: stubs }) };
    }
    return options;
  }

  /** One CLI process: `prompt`, or (a resume) none, reading until the turn's result. */
  async #turn(options: Options, binding: Binding, prompt: string | null): Promise<SDKResultMessage> {
    const abort = new AbortController();
    let release = () => {};
    const ended = new Promise<void>((resolve) => (release = resolve));
    async function* noPrompt(): AsyncGenerator<SDKUserMessage> {
      await ended; // keeps the CLI's input open until the turn's result; a resume sends no new prompt
    }
    let timedOut = false;
    const limit = (this.#options.resumeTimeout ?? 60) * 1000;
    const timer = binding.expect === null ? null : setTimeout(() => ((timedOut = true), abort.abort()), limit);
    void binding.reasked.then(() => timer && clearTimeout(timer));
    let result: SDKResultMessage | null = null;
    try {
      for await (const message of query({ prompt: prompt ?? noPrompt(), options: { ...options, abortController: abort } })) {
        if (message.type === 'result') {
          result = message;
          release();
        }
      }
    } catch (error) {
      if (timedOut) {
        throw new AdapterError(`the resumed session did not ask again about tool use ${binding.expect} within ${limit / 1000} s; nothing ran`);
      }
      throw error;
    } finally {
      release();
      if (timer) clearTimeout(timer);
    }
    if (result === null) throw new AdapterError('the CLI ended the turn without a result message');
    return result;
  }

  async #outcome(result: SDKResultMessage, binding: Binding, wait: number): Promise<RunOutcome<SDKResultMessage>> {
    const reasons = [stopReason(result), (result as { terminal_reason?: string }).terminal_reason];
    if (reasons.includes('tool_deferred_unavailable')) {
      throw new AdapterError('the resumed session could not reach the tool of its deferred call, so the call did not run');
    }
    if (!reasons.includes(TOOL_DEFERRED)) return finished(result.session_id, result);
    const deferred = (result as { deferred_tool_use?: { id: string } }).deferred_tool_use;
    const parkedRun = [...binding.parked].reverse().find((p) => deferred === undefined || p.metadata.tool_use_id === deferred.id);
    if (parkedRun === undefined) throw new AdapterError(`the CLI deferred ${deferred?.id ?? 'a call'} that crossgate did not defer`);
    const outcome = parked(parkedRun.run, parkedRun.id, parkedRun.request_ids);
    if (wait <= 0) return outcome;
    const deadline = Date.now() + wait * 1000;
    for (const id of outcome.requestIds) {
      if (isOpen(await this.#core.client.wait(id, Math.max(0, (deadline - Date.now()) / 1000)))) return outcome;
    }
    return this.resume(outcome.parkedRun, { wait: Math.max(0, (deadline - Date.now()) / 1000) });
  }
}

/** True once `stored`'s requests are all decided, waiting for the reviewer until `deadline` (ms). */
async function decidedBy(client: AgentClient, stored: ParkedRun, deadline: number): Promise<boolean> {
  if (await client.isReady(stored.id)) return true;
  for (const id of stored.request_ids) {
    const left = (deadline - Date.now()) / 1000;
    if (left <= 0 || isOpen(await client.wait(id, left))) return false;
  }
  return client.isReady(stored.id);
}

interface ParkedState {
  session_id: string;
  tool_use_id: string;
  cwd: string | null;
  agent: string | null;
  context: JsonObject;
}

function parseState(text: string, id: string): ParkedState {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new AdapterError(`parked run ${id} holds no Claude session state`);
  }
  if (!isObject(data) || typeof data.session_id !== 'string' || typeof data.tool_use_id !== 'string') {
    throw new AdapterError(`parked run ${id} holds no Claude session state`);
  }
  return {
    session_id: data.session_id,
    tool_use_id: data.tool_use_id,
    cwd: typeof data.cwd === 'string' ? data.cwd : null,
    agent: typeof data.agent === 'string' ? data.agent : null,
    context: isObject(data.context) ? data.context : {},
  };
}

function stopReason(result: SDKResultMessage): string | undefined {
  return (result as { stop_reason?: string | null }).stop_reason ?? undefined;
}
