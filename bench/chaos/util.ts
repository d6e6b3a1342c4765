/** Small helpers of the chaos harness: a seeded generator, sleeps, polling with a deadline. */
import { setTimeout as delay } from 'node:timers/promises';

/** A small deterministic generator (LCG), so a run can be replayed from its seed. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

export function sleep(ms: number): Promise<void> {
  return delay(ms);
}

/** Uniform in [min, max). */
export function between(random: () => number, min: number, max: number): number {
  return min + random() * (max - min);
}

/**
 * Polls `probe` until it returns a value (not undefined) or the deadline passes; returns
 * the value, or undefined on timeout. Never relies on a fixed sleep being long enough.
 */
export async function waitFor<T>(probe: () => Promise<T | undefined>, timeoutMs: number, everyMs = 250): Promise<T | undefined> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    let v: T | undefined;
    try {
      v = await probe();
    } catch {
      v = undefined;
    }
    if (v !== undefined) return v;
    if (Date.now() >= end) return undefined;
    await sleep(everyMs);
  }
}

export function log(line: string): void {
  process.stdout.write(`[chaos ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
}
