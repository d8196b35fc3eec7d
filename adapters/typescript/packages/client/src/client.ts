/**
 * `AgentClient`: crossgate's review queue over the native agent API (docs: AGENT_API contract), as
 * an agent credential sees it. The same members as Python's `AdapterQueue`, async, camelCase.
 */

import { randomUUID } from 'node:crypto';

import { NotFoundError } from './errors.js';
import type {
  ApprovalRequest,
  AuditEvent,
  DecisionKind,
  JsonObject,
  ParkedRun,
  ParkedRunStatus,
  PolicyDocument,
  RequestStatus,
  Submission,
  ToolCall,
  Verdict,
} from './model.js';
import { Transport, type TransportOptions } from './transport.js';

/** The longest single long poll the server holds (`GET /requests/{id}?wait=`). */
export const MAX_WAIT_SECONDS = 30;

export interface SubmitOptions {
  args_schema?: JsonObject | null;
  description?: string | null;
  requested_by?: string | null;
  capabilities?: readonly DecisionKind[];
  /** A deterministic id (see `requestId`): submitting the same call again finds the same request. */
  request_id?: string | null;
  timeout_seconds?: number | null;
  /** Kept across retries of this one submission; a fresh one by default. */
  idempotencyKey?: string;
}

export interface RequestQuery {
  status?: RequestStatus;
  run?: string;
  tool?: string;
  cursor?: string;
  limit?: number;
}

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

export interface OutcomeRecord {
  request_id: string | null;
  ran: boolean;
  result?: string | null;
  error?: string | null;
  call?: ToolCall | null;
}

export interface ParkOptions {
  framework: string;
  run: string;
  request_ids: readonly string[];
  /** The SDK's serialised state; it stays on the server. */
  state: string;
  metadata?: JsonObject;
  /** Requests `prepare` built, stored with the run in one transaction. */
  new_requests?: readonly ApprovalRequest[];
  idempotencyKey?: string;
}

export interface ParkedQuery {
  statuses?: readonly ParkedRunStatus[];
  framework?: string;
  run?: string;
}

export type ClientOptions = TransportOptions;

export class AgentClient {
  readonly transport: Transport;
  #policy: { etag: string | null; document: PolicyDocument } | null = null;

  constructor(options: ClientOptions | Transport) {
    this.transport = options instanceof Transport ? options : new Transport(options);
  }

  /** The server's policy; cached, and fetched again only when its version changed. */
  async policy(): Promise<PolicyDocument> {
    const headers: Record<string, string> = {};
    if (this.#policy?.etag) headers['if-none-match'] = this.#policy.etag;
    const reply = await this.transport.send({ method: 'GET', path: '/policy', headers });
    if (reply.status === 304 && this.#policy) return this.#policy.document;
    const document = reply.body as PolicyDocument;
    this.#policy = { etag: reply.headers.get('etag'), document };
    return document;
  }

  /** The verdict the policy (and standing rules) give `call`; records nothing. */
  async evaluate(call: ToolCall): Promise<Verdict> {
    return (await this.post('/evaluate', { call })) as Verdict;
  }

  /** Evaluate `call`; the server records allow and deny, or stores a pending request for ask. */
  submit(call: ToolCall, options: SubmitOptions = {}): Promise<Submission> {
    return this.createRequest(call, options, true);
  }

  /** `submit` without storing a new request: `park({ new_requests })` stores it with the run. */
  prepare(call: ToolCall, options: SubmitOptions = {}): Promise<Submission> {
    return this.createRequest(call, options, false);
  }

  async get(requestId: string): Promise<ApprovalRequest> {
    const reply = await this.transport.send({ method: 'GET', path: `/requests/${enc(requestId)}` });
    return reply.body as ApprovalRequest;
  }

  /** The request once no longer pending, or as it is when `timeoutSeconds` ran out (long polls in a loop). */
  async wait(requestId: string, timeoutSeconds: number): Promise<ApprovalRequest> {
    const deadline = Date.now() + Math.max(0, timeoutSeconds) * 1000;
    for (;;) {
      const remaining = (deadline - Date.now()) / 1000;
      const hold = Math.min(MAX_WAIT_SECONDS, Math.max(0, remaining));
      const reply = await this.transport.send({
        method: 'GET',
        path: `/requests/${enc(requestId)}`,
        query: hold > 0 ? { wait: Number(hold.toFixed(3)) } : {},
        holdMs: hold * 1000,
      });
      const request = reply.body as ApprovalRequest;
      if (request.status !== 'pending' || Date.now() >= deadline) return request;
    }
  }

  async listRequests(query: RequestQuery = {}): Promise<Page<ApprovalRequest>> {
    const reply = await this.transport.send({ method: 'GET', path: '/requests', query: { ...query } });
    return reply.body as Page<ApprovalRequest>;
  }

  async cancel(requestId: string, reason?: string): Promise<ApprovalRequest> {
    const body = reason === undefined ? {} : { reason };
    return (await this.post(`/requests/${enc(requestId)}/cancel`, body)) as ApprovalRequest;
  }

  /**
   * Mark a decided request applied, exactly once: the check before a tool runs. ConflictError (409)
   * means it was applied (or closed) already and the tool must not run.
   */
  async markApplied(requestId: string, args?: JsonObject | null): Promise<ApprovalRequest> {
    const body = args == null ? {} : { args };
    return (await this.post(`/requests/${enc(requestId)}/applied`, body)) as ApprovalRequest;
  }

  async recordOutcome(outcome: OutcomeRecord, idempotencyKey?: string): Promise<void> {
    await this.post('/outcomes', { ...outcome }, idempotencyKey);
  }

  /** The recorded outcome (`ran` or `not_run` event) of a request, or null when none was recorded. */
  async outcome(requestId: string): Promise<AuditEvent | null> {
    try {
      const reply = await this.transport.send({ method: 'GET', path: `/requests/${enc(requestId)}/outcome` });
      return reply.body as AuditEvent;
    } catch (error) {
      if (error instanceof NotFoundError && error.code === 'no_outcome') return null;
      throw error;
    }
  }

  /** Close this credential's requests past their expiry; returns those it closed. */
  async expireOverdue(): Promise<ApprovalRequest[]> {
    return (await this.post('/expire', {})) as ApprovalRequest[];
  }

  async park(options: ParkOptions): Promise<ParkedRun> {
    const { idempotencyKey, ...body } = options;
    const payload = { ...body, request_ids: [...body.request_ids], new_requests: [...(body.new_requests ?? [])] };
    return (await this.post('/parked', payload, idempotencyKey)) as ParkedRun;
  }

  async getParked(parkedId: string): Promise<ParkedRun> {
    return (await this.transport.send({ method: 'GET', path: `/parked/${enc(parkedId)}` })).body as ParkedRun;
  }

  async parkedRuns(query: ParkedQuery = {}): Promise<ParkedRun[]> {
    const reply = await this.transport.send({
      method: 'GET',
      path: '/parked',
      query: { status: query.statuses ?? ['parked', 'resuming'], framework: query.framework, run: query.run },
    });
    return reply.body as ParkedRun[];
  }

  async isReady(parkedId: string): Promise<boolean> {
    const reply = await this.transport.send({ method: 'GET', path: `/parked/${enc(parkedId)}/ready` });
    return (reply.body as { ready: boolean }).ready;
  }

  /** Take a parked run under a lease; ConflictError when resumed already or leased by a live resumer. */
  async claimParked(parkedId: string, owner: string, leaseSeconds = 300): Promise<ParkedRun> {
    return (await this.post(`/parked/${enc(parkedId)}/claim`, { owner, lease_seconds: leaseSeconds })) as ParkedRun;
  }

  async finishParked(
    parkedId: string,
    owner: string,
    options: { status?: ParkedRunStatus; outcome?: string | null } = {},
  ): Promise<ParkedRun> {
    const body = { owner, status: options.status ?? 'resumed', outcome: options.outcome ?? null };
    return (await this.post(`/parked/${enc(parkedId)}/finish`, body)) as ParkedRun;
  }

  private async createRequest(call: ToolCall, options: SubmitOptions, store: boolean): Promise<Submission> {
    const { idempotencyKey, ...fields } = options;
    const body: JsonObject = { call: call as unknown as JsonObject, store };
    for (const [name, value] of Object.entries(fields)) {
      if (value !== undefined) body[name] = (Array.isArray(value) ? [...value] : value) as JsonObject[string];
    }
    return (await this.post('/requests', body, idempotencyKey)) as Submission;
  }

  /** A POST with an Idempotency-Key, the same on every retry of this one operation. */
  private async post(path: string, body: unknown, idempotencyKey: string = randomUUID()): Promise<unknown> {
    return (await this.transport.send({ method: 'POST', path, body, idempotencyKey })).body;
  }
}

function enc(segment: string): string {
  return encodeURIComponent(segment);
}
