/** `Gate`: run a Mastra agent behind crossgate, park it on tool approvals, resume it from any process. */

import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';

import {
  AdapterError,
  type AgentClient,
  type AuthorityPin,
  applyDecision,
  type ApprovalRequest,
  ConfigurationError,
  ConflictError,
  finished,
  isOpen,
  type JsonObject,
  parked,
  resolution,
  resumeLeased,
  type RunOutcome,
  verifiedClient,
  type VerifiedClient,
} from '@crossgate/client';
import type { Mastra } from '@mastra/core';
import type { Agent } from '@mastra/core/agent';

import { CAPABILITIES, FRAMEWORK } from './capabilities.js';
import { callRequestId, inScope, newScope, type RunScope } from './scope.js';
import { gateTools, isGated, isJsonObject, type MastraTool, toolCall } from './tools.js';

type MastraAgent = Agent;
type Output = Awaited<ReturnType<MastraAgent['stream']>>;

/** A finished run: the model's last text and Mastra's output of the last stream. */
export interface MastraRun {
  readonly text: string;
  readonly output: Output;
}

export interface GateOptions {
  client: AgentClient;
  /** The Mastra instance, with storage every resuming process shares (LibSQL, PostgreSQL). */
  mastra: Mastra;
  /** The key of the agent on `mastra`; its tools must be `gate.tools(...)` copies. */
  agentId: string;
  /**
   * The authority's public key(s) to verify decisions and standing rules with (TrustedKeys, a PublicKey,
   * pin text or a pin file); default `$CROSSGATE_AUTHORITY_PUBKEY` / `$CROSSGATE_AUTHORITY_PUBKEY_FILE`.
   * What does not verify runs nothing. Without any, the gate runs unverified and warns once.
   */
  authority?: AuthorityPin;
  context?: JsonObject;
  owner?: string;
  leaseSeconds?: number;
}

export interface RunOptions {
  /** The crossgate run, also Mastra's runId; a fresh id by default. */
  run?: string;
  session?: string;
  requestedBy?: string;
  /** Seconds to wait inline for reviewers before parking; 0 parks at once. */
  wait?: number;
  callContext?: JsonObject;
}

interface Pending {
  toolCallId: string;
  requestId: string;
}

interface ParkedState {
  v: 1;
  /** The call Mastra is suspended on. */
  current: string;
  /** Every gated call of the step that asked, by tool call id: Mastra surfaces them one at a time. */
  pending: Pending[];
}

interface Drained {
  approval: { toolCallId: string; toolName: string; args: unknown } | null;
  calls: { toolCallId: string; toolName: string; args: unknown }[];
}

/**
 * Gated copies of Mastra tools for `client`; give them to the `Agent` a `Gate` runs. `authority` is
 * what the `Gate` takes (default: the environment's pinned key).
 */
export function gatedTools<T extends Record<string, MastraTool>>(client: AgentClient, tools: T, authority?: AuthorityPin): T {
  return gateTools(tools, { client: verifiedClient(client, authority) });
}

/**
 * Runs behind crossgate: `run` returns finished or parked; `resume(parkedRun)` takes a parked run
 * forward once its requests are decided, once, from any process with the same agent and storage.
 * Every gated call of a step is asked at once (Mastra surfaces them one by one), and each decision
 * reaches Mastra as approveToolCall or declineToolCall.
 */
export class Gate {
  readonly framework = FRAMEWORK;
  readonly owner: string;
  readonly #options: GateOptions;
  readonly #client: VerifiedClient;

  constructor(options: GateOptions) {
    this.#options = options;
    this.#client = verifiedClient(options.client, options.authority);
    this.owner = options.owner ?? `${FRAMEWORK}:${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  }

  get agentId(): string {
    return this.#options.agentId;
  }

  /** Run the agent on `input`; wait up to `wait` seconds for reviewers, then park if still pending. */
  async run(input: string, options: RunOptions = {}): Promise<RunOutcome<MastraRun>> {
    const agent = await this.#agent();
    const scope = newScope({
      run: options.run ?? `run_${randomUUID()}`,
      session: options.session ?? null,
      requestedBy: options.requestedBy ?? null,
      agent: this.agentId,
      context: { ...(this.#options.context ?? {}), ...(options.callContext ?? {}) },
    });
    const output = await inScope(scope, () => agent.stream(input, { runId: scope.run }));
    return this.#drive(agent, output, scope, options.wait ?? 0, new Map());
  }

  /**
   * Take a parked run forward once every request of it is decided (or expired); resume it once. The
   * Mastra run is looked up with listSuspendedRuns before the parked run is claimed: storage without
   * it (another Mastra) leaves the parked run as it was.
   */
  async resume(parkedRun: string, options: { wait?: number } = {}): Promise<RunOutcome<MastraRun>> {
    const client = this.#client;
    const stored = await client.getParked(parkedRun);
    if (stored.framework !== FRAMEWORK) throw new ConfigurationError(`parked run ${stored.id} belongs to ${stored.framework}, not ${FRAMEWORK}`);
    if (stored.metadata.agent !== this.agentId) {
      throw new ConfigurationError(`parked run ${stored.id} is agent ${JSON.stringify(stored.metadata.agent)}'s, not ${JSON.stringify(this.agentId)}`);
    }
    if (stored.status === 'resumed' || stored.status === 'failed') {
      throw new ConflictError(`parked run ${stored.id} was ${stored.status} already; a parked run is resumed once`, 409, 'already_resumed');
    }
    const state = parseState(stored.state, stored.id);
    const agent = await this.#agent();
    await client.expireOverdue();
    const requests = await this.#waitFor(stored.request_ids, options.wait ?? 0);
    if (requests.some(isOpen)) return parked(stored.run, stored.id, stored.request_ids);
    const { runs } = await agent.listSuspendedRuns();
    const suspended = runs.find((r) => r.runId === stored.run);
    if (suspended === undefined || !suspended.toolCalls.some((t) => t.toolCallId === state.current)) {
      throw new ConfigurationError(`Mastra's storage has no run ${stored.run} suspended on ${state.current}: resume with the storage it was parked in`);
    }
    const meta = stored.metadata;
    const scope = newScope({
      run: stored.run,
      session: typeof meta.session === 'string' ? meta.session : null,
      requestedBy: typeof meta.requested_by === 'string' ? meta.requested_by : null,
      agent: this.agentId,
      context: isJsonObject(meta.context) ? meta.context : {},
    });
    const known = new Map(state.pending.map((p) => [p.toolCallId, p.requestId]));
    const byId = new Map(requests.map((r) => [r.id, r]));
    const lease = (this.#options.leaseSeconds ?? 300) + Math.max(0, options.wait ?? 0);
    return resumeLeased(client, stored.id, {
      owner: this.owner,
      leaseSeconds: lease,
      body: async () => {
        const request = byId.get(known.get(state.current) ?? '');
        if (request === undefined) throw new AdapterError(`parked run ${stored.id} names no request for ${state.current}`);
        const output = await this.#answer(agent, scope, state.current, request);
        return this.#drive(agent, output, scope, options.wait ?? 0, known);
      },
    });
  }

  async #drive(agent: MastraAgent, first: Output, scope: RunScope, wait: number, known: Map<string, string>): Promise<RunOutcome<MastraRun>> {
    const deadline = Date.now() + wait * 1000;
    let output = first;
    for (;;) {
      const drained = await inScope(scope, () => drain(output));
      const failure = scope.failures[0];
      if (failure !== undefined) throw failure;
      if (drained.approval === null) return finished(scope.run, { text: await output.text, output });
      const current = drained.approval.toolCallId;
      scope.storeNow = Date.now() < deadline;
      const asks = await this.#ask(scope, drained, known);
      const currentId = known.get(current);
      if (currentId === undefined) throw new AdapterError(`Mastra asked for approval of ${drained.approval.toolName} that crossgate did not ask for`);
      let requests = await Promise.all([...new Set(known.values())].map(async (id) => asks.get(id)?.request ?? (await this.#client.get(id))));
      if (scope.storeNow) requests = await this.#waitFor(requests.map((r) => r.id), (deadline - Date.now()) / 1000);
      const request = requests.find((r) => r.id === currentId);
      if (request === undefined || isOpen(request)) {
        const open = requests.filter((r) => isOpen(r) || r.id === currentId);
        const state: ParkedState = { v: 1, current, pending: [...known].map(([toolCallId, requestId]) => ({ toolCallId, requestId })) };
        const run = await this.#client.park({
          framework: FRAMEWORK,
          run: scope.run,
          request_ids: open.map((r) => r.id),
          state: JSON.stringify(state),
          metadata: { agent: this.agentId, session: scope.session, requested_by: scope.requestedBy, context: scope.context },
          new_requests: [...asks.values()].filter((a) => !a.stored).map((a) => a.request),
        });
        return parked(scope.run, run.id, run.request_ids);
      }
      output = await this.#answer(agent, scope, current, request);
    }
  }

  /** Requests for every gated call of the step not asked yet (ask verdicts only), recorded in `known`. */
  async #ask(scope: RunScope, drained: Drained, known: Map<string, string>) {
    const asks = new Map<string, { request: ApprovalRequest; stored: boolean }>();
    const calls = drained.calls.some((c) => c.toolCallId === drained.approval?.toolCallId) ? drained.calls : [...drained.calls, drained.approval!];
    for (const sdkCall of calls) {
      if (known.has(sdkCall.toolCallId) || !isJsonObject(sdkCall.args)) continue;
      const call = toolCall(scope, sdkCall.toolName, sdkCall.args, sdkCall.toolCallId);
      const options = { request_id: callRequestId(scope.run, sdkCall.toolCallId), capabilities: CAPABILITIES, requested_by: scope.requestedBy };
      const submission = scope.storeNow ? await this.#client.submit(call, options) : await this.#client.prepare(call, options);
      if (submission.request === null) continue;
      known.set(sdkCall.toolCallId, submission.request.id);
      asks.set(submission.request.id, { request: submission.request, stored: submission.stored });
    }
    return asks;
  }

  /** Hand one decided request to Mastra: approveToolCall, or declineToolCall with the text the model reads. */
  async #answer(agent: MastraAgent, scope: RunScope, toolCallId: string, request: ApprovalRequest): Promise<Output> {
    const decision = resolution(request);
    if (decision === null) throw new AdapterError(`request ${request.id} is still pending`);
    if (decision.kind === 'reject') {
      // Mastra declines natively and runs nothing, whatever crossgate says: no arguments to bind.
      const applied = await applyDecision(this.#client, request, null, { actor: FRAMEWORK });
      return inScope(scope, () => agent.declineToolCall({ runId: scope.run, toolCallId, reason: applied.message }));
    }
    // Approve, edit and respond are approvals for Mastra; the gated execute applies each through the check.
    scope.decided.set(request.id, request);
    return inScope(scope, () => agent.approveToolCall({ runId: scope.run, toolCallId }));
  }

  async #agent(): Promise<MastraAgent> {
    const agent = (await this.#options.mastra.getAgent(this.agentId)) as MastraAgent;
    const tools = await agent.listTools();
    const ungated = Object.entries(tools).filter(([, t]) => typeof (t as MastraTool).execute === 'function' && !isGated(t));
    if (ungated.length) {
      throw new ConfigurationError(
        `agent ${this.agentId} has tools crossgate does not gate: ${ungated.map(([k]) => k).join(', ')} (build them with gatedTools)`,
      );
    }
    return agent;
  }

  async #waitFor(ids: readonly string[], seconds: number): Promise<ApprovalRequest[]> {
    const deadline = Date.now() + Math.max(0, seconds) * 1000;
    const found: ApprovalRequest[] = [];
    for (const id of ids) {
      const remaining = (deadline - Date.now()) / 1000;
      found.push(remaining > 0 ? await this.#client.wait(id, remaining) : await this.#client.get(id));
    }
    return found;
  }
}

async function drain(output: Output): Promise<Drained> {
  const drained: Drained = { approval: null, calls: [] };
  const answered = new Set<string>();
  for await (const chunk of output.fullStream as AsyncIterable<{ type: string; payload?: Record<string, unknown> }>) {
    const payload = chunk.payload ?? {};
    const id = typeof payload.toolCallId === 'string' ? payload.toolCallId : null;
    if (id === null) continue;
    const entry = { toolCallId: id, toolName: String(payload.toolName ?? ''), args: payload.args };
    if (chunk.type === 'tool-call') drained.calls.push(entry);
    else if (chunk.type === 'tool-result' || chunk.type === 'tool-error' || chunk.type === 'tool-output-denied') answered.add(id);
    else if (chunk.type === 'tool-call-approval') drained.approval = entry;
  }
  drained.calls = drained.calls.filter((c) => !answered.has(c.toolCallId));
  return drained;
}

function parseState(text: string, id: string): ParkedState {
  let state: unknown;
  try {
    state = JSON.parse(text);
  } catch {
    throw new ConfigurationError(`parked run ${id} holds no Mastra state`);
  }
  if (!isJsonObject(state) || state.v !== 1 || typeof state.current !== 'string' || !Array.isArray(state.pending)) {
    throw new ConfigurationError(`parked run ${id} holds no Mastra state of this version`);
  }
  return state as unknown as ParkedState;
}
