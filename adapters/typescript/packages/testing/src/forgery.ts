/**
 * The attacker of the signature tests: a writer of the server's database (crossgate's own store
 * classes, through `python/helper.py`), never the authority's private key. What it writes is what a
 * gated agent holding the store could write; a gate pinned to the authority's key must run none of it.
 */

import type { AuditEvent } from '@crossgate/client';

import { pythonOpsAsync } from './python.js';
import type { LiveServer } from './server.js';

/** How a forged approval is made: no token, a token of the forger's own key, or another request's genuine tokens. */
export type Forgery = 'unsigned' | 'other_key' | 'retarget';

/** The refusal the model reads (and the request's closing reason says) when a decision or rule does not verify. */
export const REFUSAL = 'did not verify against the authority key pinned where the tool runs';

/** Each forgery's refusal reason in the audit log (the SignatureError reason). */
export const REFUSAL_REASON: Readonly<Record<Forgery, string>> = Object.freeze({
  unsigned: 'unsigned',
  other_key: 'unknown_key',
  retarget: 'binding',
});

/** One forged approval: `source` is the genuine request a retarget copies. */
export interface Forged {
  requestId: string;
  how: Forgery;
  source?: string;
}

/** Write each request as approved in the server's database (one Python process for all). */
export async function forge(server: LiveServer, ...forged: Forged[]): Promise<void> {
  await pythonOpsAsync(forged.map((f) => ({ op: 'forge', db: server.db, request_id: f.requestId, how: f.how, source: f.source ?? null })));
}

/** Insert a standing rule into the server's database: unsigned, or signed with the writer's own key. */
export async function insertRule(server: LiveServer, rule: Record<string, unknown>, signer: 'unsigned' | 'other_key' = 'unsigned'): Promise<void> {
  await pythonOpsAsync([{ op: 'insert_rule', db: server.db, rule, signer }]);
}

/** The server's audit events, of one request or all. */
export async function auditEvents(server: LiveServer, requestId?: string): Promise<AuditEvent[]> {
  const [out] = await pythonOpsAsync<{ events: AuditEvent[] }>([{ op: 'events', db: server.db, request_id: requestId ?? null }]);
  return out?.events ?? [];
}

/** The refusals recorded when a gate closed requests: each `cancelled` event's `refused` reason, by request id. */
export async function refusals(server: LiveServer): Promise<Record<string, string>> {
  const found: Record<string, string> = {};
  for (const event of await auditEvents(server)) {
    const reason = event.payload.refused;
    if (event.kind === 'cancelled' && event.request_id !== null && typeof reason === 'string') found[event.request_id] = reason;
  }
  return found;
}
