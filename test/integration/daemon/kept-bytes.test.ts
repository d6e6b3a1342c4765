/**
 * A small file's upload sends the bytes its hash read and kept (engine/mirror.ts
 * KEEP_CONTENT_BYTES, issue 39.1): a file rewritten after its hash and before its upload is
 * sent as it was hashed, and the rewrite reaches the service by the next pass, as a rewrite
 * just after the upload would — never lost, never a second document. Real processes against
 * the emulator; the window between the hash and the upload is held open by the test-only
 * pause `upload-open` (src/test-hooks.ts), not by timing.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fileDocuments, type Workspace } from '../../helpers/mirror-check.js';
import { hookDriver, type HookDriver } from '../../helpers/hook-driver.js';
import { requireBuiltBinary, runCli } from '../cli/run-cli.js';
import { daemonWorkspace, startDaemon, waitFor, type DaemonProcess } from './daemon-process.js';

let ws: Workspace | undefined;
let daemon: DaemonProcess | undefined;
let driver: HookDriver | undefined;
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  driver?.stop();
  driver = undefined;
  await daemon?.kill();
  daemon = undefined;
  await ws?.close();
  ws = undefined;
});

/** The texts of the documents of `path` (one per document). */
function texts(w: Workspace, path: string): string[] {
  return fileDocuments(w.emu, w.dataSourceId())
    .filter((d) => d.metadata?.dssync_path === path)
    .map((d) => w.emu.store.listChunks(d.document_id).map((c) => c.text).join(''));
}

/** A workspace whose a.txt is rewritten ("version two, longer") at the first upload that sends it. */
async function rewrittenAtUpload(): Promise<{ w: Workspace; hooks: HookDriver }> {
  const w = (ws = await daemonWorkspace());
  await w.write('a.txt', 'version one');
  await w.write('b.txt', 'another file');
  let rewritten = false;
  const hooks = (driver = await hookDriver(join(w.dir, 'hooks'), ['upload-open'], async (_p, _n, detail) => {
    if (rewritten || !JSON.stringify(detail).includes('a.txt')) return;
    rewritten = true;
    await writeFile(join(w.share, 'a.txt'), 'version two, longer');
  }));
  return { w, hooks };
}

describe('a file rewritten between its hash and its upload', () => {
  it('dssync run: the version hashed is sent, then the rewrite by the next pass, under one document', { timeout: 90_000 }, async () => {
    const { w, hooks } = await rewrittenAtUpload();
    const d = (daemon = await startDaemon(w, { env: { DSSYNC_TEST_HOOKS: hooks.env } }));
    await waitFor(() => texts(w, 'a.txt').join() === 'version two, longer' && texts(w, 'b.txt').join() === 'another file', {
      timeout: 60_000,
      what: 'the rewrite mirrored',
      describe: () => `${JSON.stringify(texts(w, 'a.txt'))}\n${hooks.seen.join('\n')}\n${d.stdout().slice(-2000)}`,
    });
    // The first upload carried the version hashed: the rewrite came by a second one.
    expect(hooks.seen.filter((s) => s.includes('a.txt')).length).toBeGreaterThanOrEqual(2);
    expect(texts(w, 'a.txt')).toEqual(['version two, longer']);
  });

  it('dssync sync: the run sends the version hashed and succeeds; the next run sends the rewrite', { timeout: 90_000 }, async () => {
    const { w, hooks } = await rewrittenAtUpload();
    const first = await runCli(['sync', '--config', w.configPath], { ...w.env, DSSYNC_TEST_HOOKS: hooks.env });
    expect(first.code, first.stderr).toBe(0);
    expect(texts(w, 'a.txt')).toEqual(['version one']);
    hooks.stop();
    const second = await w.sync();
    expect(second.code, second.stderr).toBe(0);
    expect(texts(w, 'a.txt')).toEqual(['version two, longer']);
    expect(texts(w, 'b.txt')).toEqual(['another file']);
  });
});
