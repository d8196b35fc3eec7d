/**
 * One HTTP exchange with the agent API, retried until a deadline: the client's only network seam.
 *
 * A network failure, a timeout or a 502/503/504 is retried with backoff and the same Idempotency-Key,
 * so a request the server did receive is replayed rather than made twice. Past the deadline the
 * exchange fails closed with UnreachableError: the caller must not run anything on it.
 */

import { apiError, UnreachableError } from './errors.js';

export const API_PREFIX = '/api/agent/v1';

export interface TransportOptions {
  /** The server's base URL, such as `http://127.0.0.1:8700`. */
  baseUrl: string;
  /** The agent credential (tokens file `[[agents]]`, or an AAP instance token). */
  token: string;
  /** How long one operation keeps retrying before it fails closed; default 30 s. */
  deadlineMs?: number;
  /** How long one attempt may take before it is abandoned and retried; default 15 s. */
  attemptTimeoutMs?: number;
  /** The fetch to use; default the global one. */
  fetch?: typeof fetch;
  /**
   * The current W3C `traceparent` (for instance from `@opentelemetry/api`'s `propagation.inject`), read
   * once per exchange and sent with it, so the server's spans join the agent's trace. Nothing is sent
   * while it returns undefined or a value that is not a traceparent.
   */
  traceparent?: () => string | undefined;
}

export interface Exchange {
  method: 'GET' | 'POST';
  path: string;
  query?: Record<string, string | number | readonly string[] | undefined>;
  body?: unknown;
  /** Sent on every attempt of this exchange. */
  idempotencyKey?: string;
  headers?: Record<string, string>;
  /** A long poll: this attempt may take this much longer than the usual attempt timeout. */
  holdMs?: number;
}

export interface Reply {
  status: number;
  headers: Headers;
  body: unknown;
}

const RETRY_STATUSES = new Set([502, 503, 504]);
const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

export class Transport {
  readonly baseUrl: string;
  readonly deadlineMs: number;
  readonly attemptTimeoutMs: number;
  readonly #token: string;
  readonly #fetch: typeof fetch;
  readonly #traceparent: (() => string | undefined) | undefined;

  constructor(options: TransportOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.#token = options.token;
    this.deadlineMs = options.deadlineMs ?? 30_000;
    this.attemptTimeoutMs = options.attemptTimeoutMs ?? 15_000;
    this.#fetch = options.fetch ?? globalThis.fetch;
    this.#traceparent = options.traceparent;
  }

  /** The reply to `exchange` (any 2xx or 304), or the ApiError its error body describes. */
  async send(exchange: Exchange): Promise<Reply> {
    const url = this.url(exchange);
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.#token}`,
      accept: 'application/json',
      ...exchange.headers,
    };
    if (exchange.idempotencyKey !== undefined) headers['idempotency-key'] = exchange.idempotencyKey;
    const traceparent = this.#traceparent?.();
    if (traceparent !== undefined && TRACEPARENT.test(traceparent)) headers.traceparent = traceparent;
    let payload: string | undefined;
    if (exchange.body !== undefined) {
      headers['content-type'] = 'application/json';
      payload = JSON.stringify(exchange.body);
    }
    const deadline = Date.now() + this.deadlineMs + (exchange.holdMs ?? 0);
    let delay = 50;
    let last = 'no attempt was made';
    for (let attempt = 1; ; attempt++) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) break;
      const timeout = Math.min(remaining, this.attemptTimeoutMs + (exchange.holdMs ?? 0));
      let response: Response;
      try {
        const init: RequestInit = { method: exchange.method, headers, signal: AbortSignal.timeout(timeout) };
        if (payload !== undefined) init.body = payload;
        response = await this.#fetch(url, init);
      } catch (error) {
        last = describe(error);
        await sleep(Math.min(delay, Math.max(0, deadline - Date.now())));
        delay = Math.min(delay * 2, 1_000);
        continue;
      }
      const body = await readBody(response);
      if (RETRY_STATUSES.has(response.status)) {
        last = `HTTP ${response.status}${errorText(body) ? `: ${errorText(body)}` : ''}`;
        await sleep(Math.min(delay, Math.max(0, deadline - Date.now())));
        delay = Math.min(delay * 2, 1_000);
        continue;
      }
      if (response.ok || response.status === 304) return { status: response.status, headers: response.headers, body };
      throw errorOf(response.status, body);
    }
    throw new UnreachableError(
      `crossgate server at ${this.baseUrl} did not answer ${exchange.method} ${exchange.path} within ` +
        `${Math.round((this.deadlineMs + (exchange.holdMs ?? 0)) / 1000)} s (${last}); nothing was run`,
    );
  }

  private url(exchange: Exchange): string {
    const url = new URL(`${this.baseUrl}${API_PREFIX}${exchange.path}`);
    for (const [name, value] of Object.entries(exchange.query ?? {})) {
      if (value === undefined) continue;
      for (const item of Array.isArray(value) ? value : [value]) url.searchParams.append(name, String(item));
    }
    return url.toString();
  }
}

async function readBody(response: Response): Promise<unknown> {
  const text = await response.text();
  if (!text) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

function errorOf(status: number, body: unknown) {
  let code = `http_${status}`;
  let message = `HTTP ${status}`;
  if (body && typeof body === 'object') {
    const { error, message: text } = body as { error?: unknown; message?: unknown };
    if (typeof error === 'string') code = error;
    else if (error && typeof error === 'object') {
      // {"error": {"code", "message"}} as well as the server's flat {"error": code, "message": text}.
      const nested = error as { code?: unknown; message?: unknown };
      if (typeof nested.code === 'string') code = nested.code;
      if (typeof nested.message === 'string') message = nested.message;
    }
    if (typeof text === 'string') message = text;
  } else if (typeof body === 'string' && body) {
    message = body.slice(0, 200);
  }
  return apiError(status, code, message);
}

function errorText(body: unknown): string {
  if (body && typeof body === 'object' && typeof (body as { message?: unknown }).message === 'string') {
    return (body as { message: string }).message;
  }
  return '';
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    const detail = cause instanceof Error ? `: ${cause.message}` : '';
    return `${error.name}: ${error.message}${detail}`;
  }
  return String(error);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
