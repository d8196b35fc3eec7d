/**
 * The consumed approvals a state head vouches for, as a Bloom filter (Python
 * `crossgate.authority.consumed`, bit for bit): 16 bits per approval, 11 positions from one sha256 of the
 * request id, at least 4096 bits, a power of two, base64url without padding. A gate only reads it: it never
 * answers "not consumed" for a consumed approval, and rarely "consumed" for a genuine first use (fail closed).
 */

import { createHash } from 'node:crypto';

export const BITS_PER_ENTRY = 16;
export const HASHES = 11;
export const MIN_BITS = 4096;

function positions(requestId: string, bits: number): number[] {
  const digest = createHash('sha256').update(requestId, 'utf8').digest();
  const first = digest.readBigUInt64BE(0);
  const second = digest.readBigUInt64BE(8) | 1n;
  const size = BigInt(bits);
  return Array.from({ length: HASHES }, (_, i) => Number((first + BigInt(i) * second) % size));
}

/** The filter's bytes; an Error if `encoded` is not a filter Python's `build_filter` could make. */
export function filterBytes(encoded: string): Buffer {
  const raw = Buffer.from(encoded, 'base64url');
  const bits = raw.length * 8;
  if (bits < MIN_BITS || (bits & (bits - 1)) !== 0) throw new Error('a consumed-approvals filter is a power of two of at least 4096 bits');
  return raw;
}

/** True when `requestId` may be in the filter (false: it certainly is not). */
export function inFilter(raw: Uint8Array, requestId: string): boolean {
  const bits = raw.length * 8;
  return bits > 0 && positions(requestId, bits).every((p) => ((raw[p >> 3]! >> (p & 7)) & 1) === 1);
}
