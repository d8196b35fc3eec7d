import { canonicalJson, sha256Hex } from './canonical.js';

/**
 * The request id of one tool call, the same every time the call is seen again (Python's
 * `crossgate.adapter.request_id`): `tag` names the adapter, `parts` identify the call in its
 * framework (run, call id). A re-submitted call then finds the request its first submission created.
 */
export function requestId(tag: string, ...parts: (string | number | null)[]): string {
  return `req_${tag}_${sha256Hex(canonicalJson(parts)).slice(0, 32)}`;
}
