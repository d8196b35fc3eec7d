/** What the model reads when this adapter refuses a call itself. */

import { ApiError } from '@crossgate/client';

export { denyMessage } from '@crossgate/client';

/** The refusal for a request id the server holds for other arguments (422 fingerprint_mismatch), else null. */
export function fingerprintRefusal(tool: string, error: unknown): string | null {
  if (error instanceof ApiError && error.code === 'fingerprint_mismatch') return `crossgate did not run ${tool}: ${error.message}`;
  return null;
}
