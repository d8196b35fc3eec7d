/** The crossgate run a gated tool is called in: carried by AsyncLocalStorage from `Gate.run` to the tool. */

import { AsyncLocalStorage } from 'node:async_hooks';

import { requestId, type ApprovalRequest, type JsonObject } from '@crossgate/client';

import { TAG } from './capabilities.js';

export interface RunScope {
  readonly run: string;
  readonly session: string | null;
  readonly requestedBy: string | null;
  readonly agent: string;
  readonly context: JsonObject;
  /** Requests asked in this SDK call, by tool call id (stored is false until parked). */
  readonly asks: Map<string, { request: ApprovalRequest; stored: boolean }>;
  /** Calls the policy allowed outright in this SDK call: the gated tool runs and records them. */
  readonly allowed: Set<string>;
  /** Requests this resume answered, by request id: the gated tool applies them. */
  readonly decided: Map<string, ApprovalRequest>;
  /** Store new requests as they are asked (an inline wait), rather than with the parked run. */
  storeNow: boolean;
  /** Errors inside the SDK's tool execution (it would turn them into a tool result): raised after the call. */
  readonly failures: Error[];
}

const storage = new AsyncLocalStorage<RunScope>();

export function newScope(fields: Pick<RunScope, 'run' | 'session' | 'requestedBy' | 'agent' | 'context'>): RunScope {
  return { ...fields, asks: new Map(), allowed: new Set(), decided: new Map(), storeNow: false, failures: [] };
}

export function currentScope(): RunScope | undefined {
  return storage.getStore();
}

export function inScope<T>(scope: RunScope, body: () => Promise<T>): Promise<T> {
  return storage.run(scope, body);
}

/** The request id of one tool call of a run: the same every time the call is seen again. */
export function callRequestId(run: string, toolCallId: string): string {
  return requestId(TAG, run, toolCallId);
}
