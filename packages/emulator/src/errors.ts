/**
 * The emulator's error type and the one error body shape it answers with:
 * `{ "error": { "code", "message", "field"?, "file"? } }`. Handlers throw an
 * EmulatorError; the server's error handler turns it (and fastify's own errors) into
 * that body, so no route formats errors itself.
 */

export type ErrorCode =
  | 'invalid_request'
  | 'invalid_json'
  | 'invalid_id'
  | 'invalid_cursor'
  | 'malformed_multipart'
  | 'missing_organization'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'rate_limited'
  | 'internal_error'
  | 'bad_gateway'
  | 'service_unavailable';

export interface ErrorDetails {
  /** The JSON field or query parameter at fault. */
  field?: string;
  /** The uploaded file at fault (its name as sent). */
  file?: string;
}

export interface ErrorBody {
  error: { code: ErrorCode; message: string } & ErrorDetails;
}

export class EmulatorError extends Error {
  override readonly name = 'EmulatorError';
  constructor(
    readonly statusCode: number,
    readonly code: ErrorCode,
    message: string,
    readonly details: ErrorDetails = {},
    /** Extra response headers (Allow, Retry-After). */
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  toBody(): ErrorBody {
    return { error: { code: this.code, message: this.message, ...this.details } };
  }
}

export function errorBody(code: ErrorCode, message: string, details: ErrorDetails = {}): ErrorBody {
  return { error: { code, message, ...details } };
}

export const badRequest = (message: string, details?: ErrorDetails): EmulatorError =>
  new EmulatorError(400, 'invalid_request', message, details);

export const notFound = (message: string): EmulatorError => new EmulatorError(404, 'not_found', message);
