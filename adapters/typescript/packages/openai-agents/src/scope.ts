/** The crossgate run a gated tool is called in: carried by AsyncLocalStorage from `Gate.run` into the SDK's tools. */

import { AsyncLocalStorage } from 'node:async_hooks';

import { requestId, type ApprovalRequest, type JsonObject } from '@crossgate/client';

import { TAG } from './capabilities.js';

export interface RunScope {
  readonly run: string;
  /** A longer-lived grouping of runs; standing rules of scope session bind to it. */
  readonly session: string | null;
  /** Who the run acts for: every request it creates carries it, so that person cannot decide them. */
  readonly requestedBy: string | null;
  /** The app's context for the run's calls (policy `context:` conditions test it). */
  readonly context: JsonObject;
  /** Decided requests the gate just read, by id, for the gated tools to use once instead of reading again. */
  readonly decided: Map<string, ApprovalRequest>;
  /** crossgate errors raised inside the SDK's run, which the SDK may wrap: the gate raises the first one. */
  readonly failures: Error[];
}

const storage = new AsyncLocalStorage<RunScope>();

export function newScope(fields: Pick<RunScope, 'run' | 'session' | 'requestedBy' | 'context'>): RunScope {
  return { ...fields, decided: new Map(), failures: [] };
}

/** The scope of the crossgate run in progress, or undefined outside `Gate.run` / `Gate.resume`. */
export function currentScope(): RunScope | undefined {
  return storage.getStore();
}

export function inScope<T>(scope: RunScope, body: () => Promise<T>): Promise<T> {
  return storage.run(scope, body);
}

/** Keep an error raised inside the SDK's run for the gate to raise, whatever the SDK makes of it. */
export function keepFailure(error: Error): void {
  storage.getStore()?.failures.push(error);
}

/** The request id of one tool call: the same every time the call is seen again (Python's `openai_request_id`). */
export function callRequestId(run: string, agent: string, callId: string): string {
  return requestId(TAG, run, agent, callId);
}
