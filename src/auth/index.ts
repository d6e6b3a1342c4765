/**
 * Builds the token provider a connection asks for (DESIGN §6 "auth"): the one place that
 * knows the three kinds.
 */
import type { Dispatcher } from 'undici';
import type { Logger } from '../log.js';
import { CommandTokenProvider } from './command.js';
import { OAuth2TokenProvider } from './oauth2.js';
import type { TokenProvider } from '../api/token-provider.js';
import { StaticTokenProvider } from './static.js';
import type { ResolvedAuth } from './settings.js';

export interface ProviderOptions {
  /** Carries the TLS settings for a token endpoint (oauth2). */
  dispatcher: Dispatcher;
  logger?: Logger | undefined;
}

export function createTokenProvider(auth: ResolvedAuth, opts: ProviderOptions): TokenProvider {
  switch (auth.type) {
    case 'static':
      return new StaticTokenProvider(auth.token, auth.token.path);
    case 'oauth2':
      return new OAuth2TokenProvider(auth, { dispatcher: opts.dispatcher, logger: opts.logger });
    case 'command':
      return new CommandTokenProvider({ command: auth.command, timeoutMs: auth.timeoutMs, logger: opts.logger });
  }
}
