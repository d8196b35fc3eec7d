/** `Gate`: run an OpenAI Agents SDK (JS) agent behind crossgate, park it on interruptions, resume it anywhere. */

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
  denyMessage,
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
import { type Agent, type AgentInputItem, run as runAgent, type RunResult, RunState, type RunToolApprovalItem } from '@openai/agents';

import { CAPABILITIES, FRAMEWORK } from './capabilities.js';
import { MALFORMED, NOT_GATED } from './messages.js';
import { callRequestId, inScope, newScope, type RunScope } from './scope.js';
import { type GateBinding, install, isGated, parseArgs, toolCall } from './tools.js';

export type SdkResult = RunResult<any, Agent<any, any>>;
type SdkState = RunState<any, Agent<any, any>>;

export interface GateOptions {
  client: AgentClient;
  /** The SDK's starting agent; every process that resumes builds the same agent names and tools. */
  sdkAgent: Agent<any, any>;
  /**
   * The authority's public key(s) to verify decisions and standing rules with (TrustedKeys, a PublicKey,
   * pin text or a pin file); default `$CROSSGATE_AUTHORITY_PUBKEY` / `$CROSSGATE_AUTHORITY_PUBKEY_FILE`.
   * What does not verify runs nothing. Without any, the gate runs unverified and warns once.
   */
  authority?: AuthorityPin;
  /** The app's context for every call of the gate's runs (policy `context:` conditions test it). */
  context?: JsonObject;
  maxTurns?: number;
  owner?: string;
  leaseSeconds?: number;
}

export interface RunOptions {
  /** The crossgate run; a fresh id by default. */
  run?: string;
  session?: string;
  /** Who the run acts for: the server refuses that reviewer's decisions on its requests. */
  requestedBy?: string;
  /** Seconds to wait inline for reviewers before parking; 0 parks at once. */
  wait?: number;
  /** Added to the gate's context for this run. */
  callContext?: JsonObject;
}

type Answer = { kind: 'ask'; request: ApprovalRequest; stored: boolean } | { kind: 'approve' } | { kind: 'reject'; message: string };

/**
 * Runs behind crossgate: `run` returns finished or parked; `resume(parkedRun)` takes a parked run
 * forward once its requests are decided, once, from any process holding the same agent graph. The
 * SDK's `RunState` of a parked run is kept on the server, never handed to clients; the approvals in
 * it are written from the server's decisions, and the gated tools check them again before running.
 */
export class Gate {
  readonly framework = FRAMEWORK;
  readonly sdkAgent: Agent<any, any>;
  readonly owner: string;
  readonly #options: GateOptions;
  readonly #client: VerifiedClient;
  readonly #binding: GateBinding;

  constructor(options: GateOptions) {
    this.#options = options;
    this.#client = verifiedClient(options.client, options.authority);
    this.sdkAgent = options.sdkAgent;
    this.owner = options.owner ?? `${FRAMEWORK}:${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.#binding = { client: this.#client };
    install(this.sdkAgent, this.#binding);
  }

  /** Gate another agent graph with this gate's server (for agents reached other than by handoff); idempotent. */
  install(sdkAgent: Agent<any, any>): Agent<any, any> {
    install(sdkAgent, this.#binding);
    return sdkAgent;
  }

  /** Run on `input`; wait up to `wait` seconds for reviewers, then park if a request is still pending. */
  async run(input: string | AgentInputItem[], options: RunOptions = {}): Promise<RunOutcome<SdkResult>> {
    const scope = newScope({
      run: options.run ?? `run_${randomUUID()}`,
      session: options.session ?? null,
      requestedBy: options.requestedBy ?? null,
      context: { ...(this.#options.context ?? {}), ...(options.callContext ?? {}) },
    });
    return this.#drive(input, scope, options.wait ?? 0, new Set());
  }

  /**
   * Take a parked run forward once every request of it is decided (or expired); resume it once. A run
   * with a request still pending after `wait` seconds stays parked. A run resumed before, or being
   * resumed elsewhere, is refused with ConflictError and nothing runs. Who the run acts for and its
   * context are read from the parked run, never from the caller.
   */
  async resume(parkedRun: string, options: { wait?: number } = {}): Promise<RunOutcome<SdkResult>> {
    const client = this.#client;
    const stored = await client.getParked(parkedRun);
    if (stored.framework !== FRAMEWORK) {
      throw new ConfigurationError(`parked run ${stored.id} belongs to ${stored.framework}, not ${FRAMEWORK}`);
    }
    if (stored.metadata.agent !== this.sdkAgent.name) {
      throw new ConfigurationError(
        `parked run ${stored.id} started at agent ${JSON.stringify(stored.metadata.agent)}, not ${JSON.stringify(this.sdkAgent.name)}`,
      );
    }
    if (stored.status !== 'parked' && stored.status !== 'resuming') {
      throw new ConflictError(`parked run ${stored.id} was ${stored.status} already; nothing ran`, 409, 'already_resumed');
    }
    await client.expireOverdue();
    const requests = await this.#waitFor(stored.request_ids, options.wait ?? 0);
    if (requests.some(isOpen)) return parked(stored.run, stored.id, stored.request_ids);
    // Load before claiming: a state this agent graph cannot restore must not use up the parked run.
    const state = await RunState.fromString(this.sdkAgent, stored.state);
    const meta = stored.metadata;
    const scope = newScope({
      run: stored.run,
      session: text(meta.session),
      requestedBy: text(meta.requested_by),
      context: isObject(meta.context) ? meta.context : {},
    });
    const wait = options.wait ?? 0;
    // The lease must outlast an inline wait, or another resumer could take the run while this one waits.
    const leaseSeconds = (this.#options.leaseSeconds ?? 300) + Math.max(0, wait);
    return resumeLeased(client, stored.id, {
      owner: this.owner,
      leaseSeconds,
      body: async () => {
        await this.#applyDecisions(state, scope, requests);
        return this.#drive(state, scope, wait, new Set(stored.request_ids));
      },
    });
  }

  async #drive(
    start: string | AgentInputItem[] | SdkState,
    scope: RunScope,
    wait: number,
    answered: Set<string>,
  ): Promise<RunOutcome<SdkResult>> {
    const deadline = Date.now() + wait * 1000;
    for (;;) {
      const result = await this.#runSdk(start, scope);
      if (!result.interruptions?.length) return finished(scope.run, result);
      const state = result.state;
      const budget = (deadline - Date.now()) / 1000;
      const asks: { request: ApprovalRequest; stored: boolean }[] = [];
      for (const item of result.interruptions) {
        const answer = await this.#translate(item, scope, budget > 0);
        if (answer.kind === 'ask') {
          if (answered.has(answer.request.id)) {
            // The SDK asks again for a call it was given an answer for: never loop, fail closed.
            throw new AdapterError(`the SDK asked again for request ${answer.request.id} after its decision was applied`);
          }
          asks.push(answer);
        } else if (answer.kind === 'approve') {
          state.approve(item);
        } else {
          state.reject(item, { message: answer.message });
        }
      }
      let requests = asks.map((a) => a.request);
      if (budget > 0) requests = await this.#waitFor(requests.map((r) => r.id), budget);
      if (requests.some(isOpen)) {
        const parkedRun = await this.#client.park({
          framework: FRAMEWORK,
          run: scope.run,
          request_ids: requests.map((r) => r.id),
          state: state.toString(),
          metadata: { agent: this.sdkAgent.name, session: scope.session, requested_by: scope.requestedBy, context: scope.context },
          new_requests: asks.filter((a) => !a.stored).map((a) => a.request),
        });
        return parked(scope.run, parkedRun.id, parkedRun.request_ids);
      }
      await this.#applyDecisions(state, scope, requests);
      for (const r of requests) answered.add(r.id);
      start = state;
    }
  }

  async #runSdk(start: string | AgentInputItem[] | SdkState, scope: RunScope): Promise<SdkResult> {
    const options = this.#options.maxTurns === undefined ? {} : { maxTurns: this.#options.maxTurns };
    let result: SdkResult;
    try {
      result = await inScope(scope, () => runAgent(this.sdkAgent, start, options));
    } catch (error) {
      // The SDK wraps a crossgate error of a gated tool's check: raise crossgate's own, which says what failed.
      if (scope.failures.length) throw scope.failures[0];
      throw error;
    }
    if (scope.failures.length) throw scope.failures[0];
    return result;
  }

  /** The request of an interruption a reviewer must decide, or crossgate's own answer to it. */
  async #translate(item: RunToolApprovalItem, scope: RunScope, storeNow: boolean): Promise<Answer> {
    const client = this.#client;
    const agent = item.agent.name;
    const callId = String((item.rawItem as { callId?: unknown }).callId ?? '');
    const name = item.name ?? '';
    const tool = item.agent.tools.find((t: { name?: string }) => t.name === name);
    if (!isGated(tool)) return { kind: 'reject', message: NOT_GATED(name) };
    const args = parseArgs(item.arguments);
    if (typeof args === 'string') {
      const message = MALFORMED(name, args);
      await client.recordOutcome({ request_id: null, ran: false, error: message, call: toolCall(name, agent, {}, callId, scope) });
      return { kind: 'reject', message };
    }
    const call = toolCall(name, agent, args, callId, scope);
    const options = {
      args_schema: tool.parameters as unknown as JsonObject,
      description: tool.description || null,
      requested_by: scope.requestedBy,
      capabilities: CAPABILITIES,
      request_id: callRequestId(scope.run, agent, callId),
    };
    let submission;
    try {
      submission = storeNow ? await client.submit(call, options) : await client.prepare(call, options);
    } catch (error) {
      // The id names a request for another call (a tampered or replayed history): that call never runs.
      if (error instanceof ConflictError) return { kind: 'reject', message: `crossgate did not run ${name}: ${error.message}` };
      throw error;
    }
    if (submission.request !== null) return { kind: 'ask', request: submission.request, stored: submission.stored };
    if (submission.verdict.kind === 'allow') return { kind: 'approve' };
    return { kind: 'reject', message: denyMessage(name, submission.verdict) };
  }

  /** Hand each decided request to the SDK's state: approve (the gated tool applies it), or reject with its text. */
  async #applyDecisions(state: SdkState, scope: RunScope, requests: readonly ApprovalRequest[]): Promise<void> {
    const byId = new Map(requests.map((r) => [r.id, r]));
    for (const item of state.getInterruptions()) {
      const callId = String((item.rawItem as { callId?: unknown }).callId ?? '');
      const request = byId.get(callRequestId(scope.run, item.agent.name, callId));
      if (request === undefined) continue;
      const decision = resolution(request);
      if (decision?.kind === 'reject') {
        // The SDK rejects natively and runs nothing whatever crossgate says (no arguments to bind).
        const applied = await applyDecision(this.#client, request, null, { actor: FRAMEWORK });
        state.reject(item, { message: applied.message });
      } else if (decision !== null) {
        // Edit and respond are approved at the SDK level; the gated tool applies them through the check.
        state.approve(item);
        scope.decided.set(request.id, request);
      }
    }
  }

  async #waitFor(requestIds: readonly string[], budget: number): Promise<ApprovalRequest[]> {
    const deadline = Date.now() + Math.max(0, budget) * 1000;
    const found: ApprovalRequest[] = [];
    for (const id of requestIds) {
      const remaining = (deadline - Date.now()) / 1000;
      found.push(remaining > 0 ? await this.#client.wait(id, remaining) : await this.#client.get(id));
    }
    return found;
  }
}

function text(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
