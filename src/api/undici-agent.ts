/**
 * undici's `Agent` alone. The package's index loads every part of undici (fetch, HTTP/2,
 * cookies, WebSocket, the mock agent): ~75 ms of CPU at every start, where the client uses
 * the agent and its `request()` only. undici is CommonJS, so its modules are required by
 * path, and the dispatcher's methods (`request()`, `stream()`...) are put on its prototype
 * as the index does. The type is the index's: the same class
 * (`test/unit/api/undici-agent.test.ts`).
 */
import { createRequire } from 'node:module';
import type { Agent as UndiciAgent } from 'undici';

const require = createRequire(import.meta.url);
Object.assign((require('undici/lib/dispatcher/dispatcher.js') as { prototype: object }).prototype, require('undici/lib/api/index.js'));

export const Agent = require('undici/lib/dispatcher/agent.js') as typeof UndiciAgent;
export type Agent = UndiciAgent;
