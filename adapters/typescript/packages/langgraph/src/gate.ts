/**
 * `Gate`: run a LangGraph.js graph (or a LangChain.js agent, which is one) behind crossgate, park a
 * paused thread on the server, and resume it once, from any process with the same graph on the same
 * checkpointer.
 *
 * The thread's state stays in the app's checkpointer; the server holds the parked run (thread,
 * interrupt ids, request ids) and its claim is the cross-process lock. A resume answers the parked
 * interrupts by id only, and the answer carries nothing a node reads: each node reads its decisions
 * from crossgate.
 */

import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';

import {
  type AgentClient,
  type AuthorityPin,
  ConfigurationError,
  ConflictError,
  finished,
  isOpen,
  type JsonObject,
  parked,
  resumeLeased,
  type RunOutcome,
  verifiedClient,
  type VerifiedClient,
} from '@crossgate/client';
import { Command } from '@langchain/langgraph';

import { FRAMEWORK } from './capabilities.js';
import { isObject, type GateConfig } from './context.js';

/** What a gate drives: a compiled graph, or a LangChain.js agent from `createAgent`. */
export interface Runnable {
  invoke(input: unknown, config: JsonObject | object): Promise<unknown>;
  getState(config: object): unknown;
}

interface Snapshot {
  values: Record<string, unknown>;
  next: string[];
  tasks: { interrupts: { id?: string; value?: unknown }[] }[];
  createdAt?: string;
}

export interface GateOptions {
  client: AgentClient;
  graph: Runnable;
  /** The agent's name on every call; a parked run resumes only on a gate with the same name. */
  agent?: string;
  authority?: AuthorityPin;
  context?: JsonObject;
  owner?: string;
  leaseSeconds?: number;
}

export interface RunOptions {
  /** The thread (and crossgate run); a fresh id by default. */
  thread?: string;
  session?: string;
  requestedBy?: string;
  callContext?: JsonObject;
  /** Seconds to wait inline for reviewers before parking; 0 parks at once. */
  wait?: number;
}

interface GraphConfig {
  configurable: { thread_id: string; crossgate: GateConfig };
}

interface ParkedState {
  v: 1;
  thread: string;
  /** The interrupt ids it paused on, for the record: a resume answers the ones pending then (same requests). */
  interrupts: string[];
}

/** The resume value of every interrupt: nodes read decisions from crossgate, never from it. */
const DECIDED = { crossgate: 'decided' } as const;

export class Gate {
  readonly framework = FRAMEWORK;
  readonly agent: string;
  readonly owner: string;
  /** The gate's client (verifying): pass it to `requestApproval`, `gatedToolNode` and the middleware. */
  readonly client: VerifiedClient;
  readonly #options: GateOptions;

  constructor(options: GateOptions) {
    this.#options = options;
    this.client = verifiedClient(options.client, options.authority);
    this.agent = options.agent ?? 'langgraph-agent';
    this.owner = options.owner ?? `${FRAMEWORK}:${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  }

  /** Run the graph on `input`; finished, or parked when the thread paused on crossgate's requests. */
  async run(input: unknown, options: RunOptions = {}): Promise<RunOutcome<Record<string, unknown>>> {
    const thread = options.thread ?? `run_${randomUUID()}`;
    const gate: GateConfig = {
      agent: this.agent,
      session: options.session ?? null,
      requested_by: options.requestedBy ?? null,
      context: { ...(this.#options.context ?? {}), ...(options.callContext ?? {}) },
    };
    const config = this.#config(thread, gate);
    if ((await this.#snapshot(config)).createdAt !== undefined) {
      throw new ConfigurationError(`thread ${thread} has run before: run a new thread, or resume its parked run`);
    }
    return this.#settle(await this.#options.graph.invoke(input, config), config, gate, options.wait ?? 0);
  }

  /**
   * Take a parked thread forward once every request of it is decided; once, from any process. A run
   * resumed before, or being resumed elsewhere, is refused with ConflictError and nothing runs.
   */
  async resume(parkedRun: string, options: { wait?: number } = {}): Promise<RunOutcome<Record<string, unknown>>> {
    const client = this.client;
    const stored = await client.getParked(parkedRun);
    if (stored.framework !== FRAMEWORK) throw new ConfigurationError(`parked run ${stored.id} belongs to ${stored.framework}, not ${FRAMEWORK}`);
    if (stored.metadata.agent !== this.agent) {
      throw new ConfigurationError(`parked run ${stored.id} is agent ${JSON.stringify(stored.metadata.agent)}'s, not ${JSON.stringify(this.agent)}`);
    }
    const state = parseState(stored.state, stored.id);
    await client.expireOverdue();
    const requests = await Promise.all(stored.request_ids.map((id) => client.wait(id, options.wait ?? 0)));
    if (requests.some(isOpen)) return parked(stored.run, stored.id, stored.request_ids);
    const meta = stored.metadata;
    const gate: GateConfig = {
      agent: this.agent,
      session: typeof meta.session === 'string' ? meta.session : null,
      requested_by: typeof meta.requested_by === 'string' ? meta.requested_by : null,
      context: isObject(meta.context) ? meta.context : {},
    };
    const config = this.#config(state.thread, gate);
    return resumeLeased(client, stored.id, {
      owner: this.owner,
      leaseSeconds: this.#options.leaseSeconds ?? 300,
      body: async () => {
        const snapshot = await this.#snapshot(config);
        const pending = snapshot.tasks.flatMap((t) => t.interrupts);
        // The same requests, not necessarily the same interrupt ids: a resume that found a request still
        // pending paused the node again, with a new interrupt for the same requests.
        const parkedIds = new Set(stored.request_ids);
        const ours = pending.length > 0 && pending.every((i) => requestIdsOf(i.value).length > 0 && requestIdsOf(i.value).every((id) => parkedIds.has(id)));
        if (snapshot.createdAt === undefined || !ours) {
          throw new ConflictError(`thread ${state.thread} moved on since it parked (or never started): nothing was resumed`, 409, 'thread_moved');
        }
        const resume = Object.fromEntries(pending.map((i) => [i.id ?? '', DECIDED]));
        // LangGraph's (internal) strict resume: an id that is not pending is refused, not taken as the answer.
        const strict = { ...config, configurable: { ...config.configurable, __pregel_strict_resume: true } };
        return this.#settle(await this.#options.graph.invoke(new Command({ resume }), strict), config, gate, options.wait ?? 0);
      },
    });
  }

  async #settle(result: unknown, config: GraphConfig, gate: GateConfig, wait: number): Promise<RunOutcome<Record<string, unknown>>> {
    const thread = config.configurable.thread_id;
    let values = result as Record<string, unknown>;
    const deadline = Date.now() + wait * 1000;
    for (;;) {
      const snapshot = await this.#snapshot(config);
      const interrupts = snapshot.tasks.flatMap((t) => t.interrupts);
      if (interrupts.length === 0) return finished(thread, values);
      const requestIds = interrupts.flatMap((i) => requestIdsOf(i.value));
      if (requestIds.length === 0) throw new ConfigurationError(`thread ${thread} paused on an interrupt that is not crossgate's`);
      const requests = await Promise.all(requestIds.map((id) => this.client.wait(id, Math.max(0, (deadline - Date.now()) / 1000))));
      if (requests.some(isOpen)) {
        const state: ParkedState = { v: 1, thread, interrupts: interrupts.map((i) => i.id ?? '') };
        const run = await this.client.park({
          framework: FRAMEWORK,
          run: thread,
          request_ids: requestIds,
          state: JSON.stringify(state),
          metadata: { agent: this.agent, session: gate.session ?? null, requested_by: gate.requested_by ?? null, context: gate.context ?? {} },
        });
        return parked(thread, run.id, run.request_ids);
      }
      const resume = Object.fromEntries(interrupts.map((i) => [i.id ?? '', DECIDED]));
      values = (await this.#options.graph.invoke(new Command({ resume }), config)) as Record<string, unknown>;
    }
  }

  #config(thread: string, gate: GateConfig): GraphConfig {
    return { configurable: { thread_id: thread, crossgate: gate } };
  }

  async #snapshot(config: object): Promise<Snapshot> {
    return (await this.#options.graph.getState(config)) as Snapshot;
  }
}

function requestIdsOf(value: unknown): string[] {
  if (!isObject(value) || !Array.isArray(value.requestIds)) return [];
  return value.requestIds.filter((id): id is string => typeof id === 'string');
}

function parseState(text: string, id: string): ParkedState {
  let state: unknown;
  try {
    state = JSON.parse(text);
  } catch {
    throw new ConfigurationError(`parked run ${id} holds no LangGraph state`);
  }
  if (!isObject(state) || state.v !== 1 || typeof state.thread !== 'string' || !Array.isArray(state.interrupts)) {
    throw new ConfigurationError(`parked run ${id} holds no LangGraph state of this version`);
  }
  return state as unknown as ParkedState;
}
