import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StateStore } from '../../../src/state/store.js';
import { runChild } from './helpers/child.js';
import { transpileState, type TranspiledState } from './helpers/transpile.js';

let js: TranspiledState;
let dir: string;

beforeAll(async () => {
  js = await transpileState();
  dir = await mkdtemp(join(tmpdir(), 'dssync-crash-'));
});
afterAll(async () => {
  await js.cleanup();
  await rm(dir, { recursive: true, force: true });
});

/**
 * Mutates (files, intents, the last pass's counter) and writes in a loop: timed writes every
 * 2 ms plus explicit flushes. Prints "flushed N" only after flush() resolved, so N must
 * survive a kill -9 that comes after the line.
 */
const WRITER = (storeUrl: string) => `
import { StateStore } from ${JSON.stringify(storeUrl)};
const store = await StateStore.open(process.argv[2], { writeDelayMs: 2 });
store.ensureMapping('m', 'ds-1', '/srv/m');
let n = store.mapping('m').lastPass?.summary.counter ?? 0;
const entry = (i) => ({ documentId: 'doc-' + i, size: i, mtimeMs: 1700000000000.5 + i, sha256: String(i).padStart(64, '0'), syncedAt: new Date().toISOString() });
if (store.mapping('m').files.size === 0) {
  for (let i = 0; i < 20000; i++) store.setFile('m', 'folder ' + (i % 100) + '/file-' + i + '.txt', entry(i));
}
console.log('ready');
for (;;) {
  n++;
  for (let j = 0; j < 200; j++) {
    const i = (n * 200 + j) % 20000;
    if (j % 3 === 0) store.deleteFile('m', 'folder ' + (i % 100) + '/file-' + i + '.txt');
    else store.setFile('m', 'folder ' + (i % 100) + '/file-' + i + '.txt', entry(n));
  }
  const id = await store.beginIntent('m', { kind: 'upload', files: [{ path: 'p' + n, size: n, mtimeMs: n, sha256: 'h' + n }] });
  store.endIntent('m', id);
  store.setLastPass('m', { startedAt: 'a', finishedAt: 'b', ok: true, summary: { counter: n } });
  await store.flush();
  console.log('flushed ' + n);
}
`;

describe('state file under kill -9', () => {
  it('always loads after the writer is killed at random moments, with every flushed change', { timeout: 120_000 }, async () => {
    const statePath = join(dir, 'state.json');
    let acknowledged = 0;
    for (let round = 0; round < 8; round++) {
      const child = await runChild(js.dir, `writer-${round}.mjs`, WRITER(js.module('state/store.js')), [statePath]);
      try {
        await child.waitFor(/^ready$/);
        await child.waitFor(/^flushed \d+$/);
        // Any moment must do: the delay only spreads the kills over the write cycle.
        await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 300)));
      } finally {
        await child.kill9();
      }
      const last = child.lines.filter((l) => l.startsWith('flushed ')).at(-1);
      if (last) acknowledged = Number(last.slice('flushed '.length));

      // The lock of the killed writer is stale: the store takes it over and loads the file.
      const store = await StateStore.open(statePath);
      try {
        const m = store.mapping('m');
        expect(m, `round ${round}: ${child.stderr()}`).toBeDefined();
        const counter = m?.lastPass?.summary['counter'] ?? 0;
        expect(counter).toBeGreaterThanOrEqual(acknowledged);
        expect((m?.files.size ?? 0)).toBeGreaterThan(10_000);
        const temps = (await readdir(dir)).filter((n) => n.includes('.tmp-'));
        expect(temps).toEqual([]); // leftovers of the interrupted write were removed
      } finally {
        await store.close();
      }
    }
    expect(acknowledged).toBeGreaterThan(0);
  });
});
