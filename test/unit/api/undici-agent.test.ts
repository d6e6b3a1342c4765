/**
 * The client's undici Agent, required without undici's index (src/api/undici-agent.ts), is
 * the index's own class: an undici that moves its modules fails here, not at a user's first
 * request. (This process loads the index too; that the agent's methods are there without it
 * is proven by every integration test of the built CLI, where the index is not loaded.)
 */
import { describe, expect, it } from 'vitest';
import * as undici from 'undici';
import { Agent } from '../../../src/api/undici-agent.js';

describe("undici's Agent alone", () => {
  it('is the index\'s Agent, with request() and the other dispatcher methods', async () => {
    expect(Agent).toBe(undici.Agent);
    const agent = new Agent();
    for (const m of ['request', 'stream', 'pipeline', 'connect', 'upgrade', 'dispatch', 'close']) expect(typeof (agent as unknown as Record<string, unknown>)[m], m).toBe('function');
    await agent.close();
  });
});
