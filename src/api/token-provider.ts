/**
 * The one source of access tokens for every request of a client (DESIGN §6 "auth"): the
 * client's port, implemented by auth/ and handed to the client by the composition
 * (compose/client.ts), so api/ imports nothing of auth/. The client asks `token()` before each attempt and `renewAfterRejection()` after a 401; it
 * knows nothing else about credentials.
 */

export type ProviderKind = 'static' | 'oauth2' | 'command';

export interface TokenStatus {
  kind: ProviderKind;
  /** Where the credentials come from, for messages: never a secret. */
  description: string;
  /** Epoch ms when the current token expires; undefined when unknown or none held. */
  expiresAt?: number | undefined;
  /** Epoch ms of the last token obtained. */
  obtainedAt?: number | undefined;
  /** A refresh token is held (its value is never shown). */
  hasRefreshToken?: boolean | undefined;
  /** The last failure to obtain a token, when the current one could not be renewed. */
  lastError?: string | undefined;
}

export interface TokenProvider {
  readonly kind: ProviderKind;
  readonly description: string;
  /** A token valid now: cached, or renewed ahead of its expiry (one renewal at a time). */
  token(signal?: AbortSignal): Promise<string>;
  /**
   * The service refused `rejected` with 401: renew once (unless another request already
   * did) and return the new token; undefined when nothing different can be had.
   */
  renewAfterRejection(rejected: string, signal?: AbortSignal): Promise<string | undefined>;
  status(): TokenStatus;
  close(): Promise<void>;
}

/** A provider of one fixed token: tests and embedding code. */
export function fixedToken(value: string): TokenProvider {
  return {
    kind: 'static',
    description: 'a fixed token',
    token: () => Promise.resolve(value),
    renewAfterRejection: () => Promise.resolve(undefined),
    status: () => ({ kind: 'static', description: 'a fixed token' }),
    close: () => Promise.resolve(),
  };
}
