/**
 * undici's `Agent` alone. The package's index loads every part of undici (fetch, HTTP/2,
 * cookies, WebSocket, the mock agent): ~75 ms of CPU at every start, where the client uses
 * the agent and its `request()` only. undici is CommonJS, so its agent's module is required
 * by path; the type is the index's, the same class.
 */
import { createRequire } from 'node:module';
import type { Agent as UndiciAgent } from 'undici';

export const Agent = createRequire(import.meta.url)('undici/lib/dispatcher/agent.js') as typeof UndiciAgent;
export type Agent = UndiciAgent;
