/**
 * Every error the crossgate TypeScript packages raise, in one tree (the Python tree's names):
 *
 *     CrossgateError
 *     ├── ApiError                 the server refused: status and its error code
 *     │   ├── NotFoundError            404 unknown, or not this credential's
 *     │   ├── ConflictError            409 the state moved on (applied, claimed, idempotency conflict)
 *     │   ├── ForbiddenError           401 / 403 the credential may not do this
 *     │   └── InvalidRequestError      400 / 413 / 422 a body the server refuses
 *     ├── UnreachableError         no answer before the deadline (network, 5xx): nothing ran
 *     ├── InvalidArgumentsError    a value with no canonical JSON form
 *     ├── SignatureError           a decision not signed by a pinned authority key, or signed for another call
 *     ├── ConfigurationError       an option that cannot work
 *     └── AdapterError             an SDK did something the adapter cannot translate
 *
 * A pending request is a return value, never an exception. Every error here fails closed: a tool
 * whose check raised does not run.
 */

export class CrossgateError extends Error {
  override name = 'CrossgateError';
}

/** The server answered with an error body (`{"error": code, "message": text, "status": n}`). */
export class ApiError extends CrossgateError {
  override name = 'ApiError';
  constructor(
    message: string,
    readonly status: number,
    readonly code: string,
  ) {
    super(message);
  }
}

export class NotFoundError extends ApiError {
  override name = 'NotFoundError';
}

export class ConflictError extends ApiError {
  override name = 'ConflictError';
}

export class ForbiddenError extends ApiError {
  override name = 'ForbiddenError';
}

export class InvalidRequestError extends ApiError {
  override name = 'InvalidRequestError';
}

/** The server did not answer before the client's deadline; the operation may not have happened. */
export class UnreachableError extends CrossgateError {
  override name = 'UnreachableError';
}

export class InvalidArgumentsError extends CrossgateError {
  override name = 'InvalidArgumentsError';
}

/** Why a token was refused: the same reasons as `crossgate.errors.SignatureError`. */
export type SignatureReason =
  | 'unsigned'
  | 'malformed'
  | 'algorithm'
  | 'unknown_key'
  | 'revoked_key'
  | 'bad_signature'
  | 'wrong_type'
  | 'binding'
  | 'lapsed'
  | 'stale_head'
  | 'rolled_back'
  | 'consumed'
  | 'revoked_rule';

export class SignatureError extends CrossgateError {
  override name = 'SignatureError';
  constructor(
    message: string,
    readonly reason: SignatureReason,
  ) {
    super(message);
  }
}

export class ConfigurationError extends CrossgateError {
  override name = 'ConfigurationError';
}

export class AdapterError extends CrossgateError {
  override name = 'AdapterError';
}

/** The ApiError subclass for an HTTP status. */
export function apiError(status: number, code: string, message: string): ApiError {
  if (status === 404) return new NotFoundError(message, status, code);
  if (status === 409) return new ConflictError(message, status, code);
  if (status === 401 || status === 403) return new ForbiddenError(message, status, code);
  if (status === 400 || status === 413 || status === 422) return new InvalidRequestError(message, status, code);
  return new ApiError(message, status, code);
}
