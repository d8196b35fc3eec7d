/** `Gate`: run a Vercel AI SDK 7 `generateText` loop behind crossgate, park it on approvals, resume it anywhere. */

import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';

import {
  AdapterError,
  type AgentClient,
  type AuthorityPin,
  applyDecision,
  type ApprovalRequest,
  ConfigurationError,
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
import { generateText, type LanguageModel, type ModelMessage, type ToolApprovalResponse, type ToolSet } from 'ai';

import { approvalFunction } from './approval.js';
import { FRAMEWORK } from './capabilities.js';
import { callRequestId, inScope, newScope, type RunScope } from './scope.js';
import { gateTools } from './tools.js';

type GenerateOptions = Parameters<typeof generateText>[0];
/** `generateText` options a gate passes on as they are (`stopWhen`, `maxRetries`, `providerOptions`, ...). */
export type CallSettings = Omit<GenerateOptions, 'model' | 'tools' | 'toolApproval' | 'messages' | 'prompt' | 'system'>;
export type GenerateResult = Awaited<ReturnType<typeof generateText>>;

/** A finished run: the SDK's result of its last call, and the whole message history. */
export interface AiSdkRun {
  readonly result: GenerateResult;
  readonly messages: ModelMessage[];
}

export interface GateOptions<TOOLS extends ToolSet> {
  client: AgentClient;
  model: LanguageModel;
  /** The app's tools; the gate calls their bodies only through its check. */
  tools: TOOLS;
  /** The agent's name on every call; a parked run resumes only on a gate with the same name. */
  agent?: string;
  system?: string;
  settings?: CallSettings;
  /**
   * The authority's public key(s) to verify decisions and standing rules with (TrustedKeys, a PublicKey,
   * pin text or a pin file); default `$CROSSGATE_AUTHORITY_PUBKEY` / `$CROSSGATE_AUTHORITY_PUBKEY_FILE`.
   * What does not verify runs nothing. Without any, the gate runs unverified and warns once.
   */
  authority?: AuthorityPin;
  /** The app's context for every call (policy `context:` conditions test it). */
  context?: JsonObject;
  owner?: string;
  leaseSeconds?: number;
  /** The text a reviewer sees for a tool (default: the tool's description). */
  describe?: (tool: string) => string | null;
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

interface PendingApproval {
  approvalId: string;
  toolCallId: string;
  requestId: string;
}

interface ParkedState {
  v: 1;
  messages: ModelMessage[];
  pending: PendingApproval[];
}

/**
 * Runs behind crossgate: `run` returns finished or parked; `resume(parkedRun)` takes a parked run
 * forward once its requests are decided, once, from any process holding the same tools and model.
 * The SDK's messages of a parked run are kept on the server, never handed to clients; the
 * approval answers are written from the server's decisions, never read from client history.
 */
export class Gate<TOOLS extends ToolSet = ToolSet> {
  readonly framework = FRAMEWORK;
  readonly agent: string;
  readonly owner: string;
  /** The gated copies of the tools: pass these (and `toolApproval`) wherever the SDK takes tools. */
  readonly tools: TOOLS;
  readonly toolApproval: ReturnType<typeof approvalFunction>;
  readonly #options: GateOptions<TOOLS>;
  readonly #client: VerifiedClient;

  constructor(options: GateOptions<TOOLS>) {
    this.#options = options;
    this.#client = verifiedClient(options.client, options.authority);
    this.agent = options.agent ?? 'ai-sdk-agent';
    this.owner = options.owner ?? `${FRAMEWORK}:${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    const binding = { client: this.#client };
    const { tools, gated } = gateTools(options.tools, binding);
    this.tools = tools;
    const describe = options.describe ?? ((name: string) => (options.tools[name] as { description?: string } | undefined)?.description ?? null);
    this.toolApproval = approvalFunction(binding, gated, describe);
  }

  /** Run on `input` (a prompt or messages); wait up to `wait` seconds for reviewers, then park if still pending. */
  async run(input: string | ModelMessage[], options: RunOptions = {}): Promise<RunOutcome<AiSdkRun>> {
    const messages: ModelMessage[] = typeof input === 'string' ? [{ role: 'user', content: input }] : [...input];
    const scope = newScope({
      run: options.run ?? `run_${randomUUID()}`,
      session: options.session ?? null,
      requestedBy: options.requestedBy ?? null,
      agent: this.agent,
      context: { ...(this.#options.context ?? {}), ...(options.callContext ?? {}) },
    });
    return this.#drive(messages, scope, options.wait ?? 0, new Set());
  }

  /**
   * Take a parked run forward once every request of it is decided (or expired); resume it once. A run
   * with a request still pending after `wait` seconds stays parked. A run resumed before, or being
   * resumed elsewhere, is refused with ConflictError and nothing runs.
   */
  async resume(parkedRun: string, options: { wait?: number } = {}): Promise<RunOutcome<AiSdkRun>> {
    const client = this.#client;
    const stored = await client.getParked(parkedRun);
    if (stored.framework !== FRAMEWORK) throw new ConfigurationError(`parked run ${stored.id} belongs to ${stored.framework}, not ${FRAMEWORK}`);
    if (stored.metadata.agent !== this.agent) {
      throw new ConfigurationError(`parked run ${stored.id} is agent ${JSON.stringify(stored.metadata.agent)}'s, not ${JSON.stringify(this.agent)}`);
    }
    const state = parseState(stored.state, stored.id);
    await client.expireOverdue();
    const requests = await this.#waitFor(stored.request_ids, options.wait ?? 0);
    if (requests.some(isOpen)) return parked(stored.run, stored.id, stored.request_ids);
    const meta = stored.metadata;
    const scope = newScope({
      run: stored.run,
      session: text(meta.session),
      requestedBy: text(meta.requested_by),
      agent: this.agent,
      context: isObject(meta.context) ? meta.context : {},
    });
    const lease = (this.#options.leaseSeconds ?? 300) + Math.max(0, options.wait ?? 0);
    return resumeLeased(client, stored.id, {
      owner: this.owner,
      leaseSeconds: lease,
      body: async () => {
        const reply = await this.#answers(scope, state.pending, requests);
        return this.#drive([...state.messages, reply], scope, options.wait ?? 0, new Set(stored.request_ids));
      },
    });
  }

  async #drive(start: ModelMessage[], scope: RunScope, wait: number, answered: Set<string>): Promise<RunOutcome<AiSdkRun>> {
    const deadline = Date.now() + wait * 1000;
    let messages = start;
    for (;;) {
      scope.storeNow = Date.now() < deadline;
      scope.asks.clear();
      const result = await inScope(scope, () =>
        generateText({
          ...(this.#options.settings ?? {}),
          model: this.#options.model,
          ...(this.#options.system !== undefined ? { system: this.#options.system } : {}),
          tools: this.tools,
          toolApproval: this.toolApproval as GenerateOptions['toolApproval'],
          messages,
        } as GenerateOptions),
      );
      const failure = scope.failures[0];
      if (failure !== undefined) throw failure;
      messages = [...messages, ...result.responseMessages];
      const pending: PendingApproval[] = [];
      const asks: { request: ApprovalRequest; stored: boolean }[] = [];
      for (const part of result.content) {
        if (part.type !== 'tool-approval-request' || part.isAutomatic) continue;
        const ask = scope.asks.get(part.toolCall.toolCallId);
        if (ask === undefined) throw new AdapterError(`the SDK asked for approval of ${part.toolCall.toolName} without crossgate's toolApproval`);
        if (answered.has(ask.request.id)) {
          // The SDK asks again for a call it was answered for: never loop, fail closed.
          throw new AdapterError(`the SDK asked again for request ${ask.request.id} after its decision was applied`);
        }
        pending.push({ approvalId: part.approvalId, toolCallId: part.toolCall.toolCallId, requestId: ask.request.id });
        asks.push(ask);
      }
      if (pending.length === 0) return finished(scope.run, { result, messages });
      let requests = asks.map((a) => a.request);
      if (scope.storeNow) requests = await this.#waitFor(requests.map((r) => r.id), (deadline - Date.now()) / 1000);
      if (requests.some(isOpen)) {
        const state: ParkedState = { v: 1, messages, pending };
        const run = await this.#client.park({
          framework: FRAMEWORK,
          run: scope.run,
          request_ids: requests.map((r) => r.id),
          state: JSON.stringify(state),
          metadata: { agent: this.agent, session: scope.session, requested_by: scope.requestedBy, context: scope.context },
          new_requests: asks.filter((a) => !a.stored).map((a) => a.request),
        });
        return parked(scope.run, run.id, run.request_ids);
      }
      messages = [...messages, await this.#answers(scope, pending, requests)];
      for (const r of requests) answered.add(r.id);
    }
  }

  /** One tool message answering every pending approval at once, from the server's decisions. */
  async #answers(scope: RunScope, pending: PendingApproval[], requests: ApprovalRequest[]): Promise<ModelMessage> {
    const byId = new Map(requests.map((r) => [r.id, r]));
    const content: ToolApprovalResponse[] = [];
    for (const item of pending) {
      const request = byId.get(item.requestId) ?? (await this.#client.get(item.requestId));
      if (request.id !== callRequestId(scope.run, item.toolCallId)) throw new AdapterError(`parked state names request ${request.id} for another call`);
      const decision = resolution(request);
      if (decision === null) throw new AdapterError(`request ${request.id} is still pending`);
      if (decision.kind === 'reject') {
        // The SDK rejects natively and runs nothing, whatever crossgate says: no arguments to bind.
        const applied = await applyDecision(this.#client, request, null, { actor: FRAMEWORK });
        content.push({ type: 'tool-approval-response', approvalId: item.approvalId, approved: false, reason: applied.message });
      } else {
        // Approve, edit and respond are approved at the SDK level; the gated execute applies each through the check.
        scope.decided.set(request.id, request);
        content.push({ type: 'tool-approval-response', approvalId: item.approvalId, approved: true });
      }
    }
    return { role: 'tool', content };
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

function parseState(text: string, id: string): ParkedState {
  let state: unknown;
  try {
    state = JSON.parse(text);
  } catch {
    throw new ConfigurationError(`parked run ${id} holds no AI SDK state`);
  }
  if (!isObject(state) || state.v !== 1 || !Array.isArray(state.messages) || !Array.isArray(state.pending)) {
    throw new ConfigurationError(`parked run ${id} holds no AI SDK state of this version`);
  }
  return state as unknown as ParkedState;
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function text(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}
