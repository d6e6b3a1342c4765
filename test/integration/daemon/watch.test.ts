/**
 * `dssync run` end to end while files change: a real daemon process, a real folder, the
 * emulator over loopback. After every step the data source must converge to the folder
 * (nothing lost, duplicated, orphaned or stale), with the cheapest operations: renames and
 * moves keep their documents (no upload), a file being written is uploaded once.
 */
import { createHash } from 'node:crypto';
import { mkdir, open, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { daemonTests } from '../../helpers/daemon-test.js';
import { docAt, waitConverged, waitIdle } from './daemon-process.js';
import { fileDocuments, filesUploaded } from '../../helpers/mirror-check.js';

const daemons = daemonTests();

const sha = (s: string | Buffer): string => createHash('sha256').update(s).digest('hex');
const DEBOUNCE_MS = 300;

describe('dssync run: full pass at start, then watching', () => {
  it('mirrors every kind of change while running, with renames kept as renames and writes uploaded once', { timeout: 150_000 }, async () => {
    const { w, d } = await daemons.start({ config: { debounceMs: DEBOUNCE_MS }, files: { 'start/a.txt': 'alpha', 'start/b.md': '# bravo', 'keep.txt': 'kept' } });
    const uploads = (): number => filesUploaded(w.emu);
    /** Converged, then idle: counters read afterwards are final for the step. */
    let stepStart = Date.now();
    const settle = async (what: string): Promise<void> => {
      await waitConverged(w, what);
      await waitIdle(d);
      await waitConverged(w, `${what} (after idle)`);
      if (process.env.DSSYNC_TEST_VERBOSE) console.log(`${what}: ${Date.now() - stepStart} ms`);
      stepStart = Date.now();
    };
    const idOf = (path: string): string | undefined => {
      const docs = docAt(w, path);
      expect(docs.length, `documents at ${path}`).toBeLessThanOrEqual(1);
      return docs[0]?.document_id;
    };

    // 1. Files present at start.
    await settle('the startup full pass');
    expect(uploads()).toBe(3);

    // 2. A new file.
    await w.write('new.txt', 'brand new');
    await settle('a new file');
    expect(uploads()).toBe(4);

    // 3. A slow append: one upload of the final content. A writer that pauses longer than
    //    the debounce is indistinguishable from one that finished, so the exact count is
    //    asserted only when this process kept every pause below the debounce.
    {
      const before = uploads();
      const fh = await open(join(w.share, 'slow.txt'), 'w');
      const chunks: string[] = [];
      let maxGap = 0;
      let last = Date.now();
      for (let i = 0; i < 10; i++) {
        const chunk = `chunk ${i} ${'x'.repeat(2000)}\n`;
        chunks.push(chunk);
        await fh.write(chunk);
        const now = Date.now();
        maxGap = Math.max(maxGap, now - last);
        last = now;
        await new Promise((r) => setTimeout(r, 100));
      }
      await fh.close();
      await settle('a slow append');
      const final = chunks.join('');
      expect(docAt(w, 'slow.txt')[0]?.metadata.dssync_sha256).toBe(sha(final));
      if (maxGap < DEBOUNCE_MS - 50) expect(uploads() - before, `writer's longest pause ${maxGap} ms`).toBe(1);
      else expect(uploads() - before).toBeLessThanOrEqual(2);
    }

    // 4. A rename: the same document, updated, nothing uploaded.
    {
      const before = uploads();
      const id = idOf('new.txt');
      await rename(join(w.share, 'new.txt'), join(w.share, 'renamed.txt'));
      await settle('a rename');
      expect(idOf('renamed.txt')).toBe(id);
      expect(uploads()).toBe(before);
    }

    // 5. A folder moved: every file under it renamed, nothing uploaded.
    {
      const before = uploads();
      const ids = [idOf('start/a.txt'), idOf('start/b.md')];
      await mkdir(join(w.share, 'archive/2024'), { recursive: true });
      await rename(join(w.share, 'start'), join(w.share, 'archive/2024/start'));
      await settle('a folder move');
      expect([idOf('archive/2024/start/a.txt'), idOf('archive/2024/start/b.md')]).toEqual(ids);
      expect(uploads()).toBe(before);
    }

    // 6. A tree deleted: its documents deleted.
    {
      await w.write('tree/one.txt', 'one');
      await w.write('tree/sub/two.txt', 'two');
      await w.write('tree/sub/deeper/three.txt', 'three');
      await settle('a new tree');
      const count = fileDocuments(w.emu, w.dataSourceId()).length;
      await rm(join(w.share, 'tree'), { recursive: true });
      await settle('a tree delete');
      expect(fileDocuments(w.emu, w.dataSourceId()).length).toBe(count - 3);
    }

    // 7. An editor's atomic save: one replace; the temp file is never uploaded.
    {
      await w.write('file.txt', 'version 1');
      await settle('file.txt created');
      const before = uploads();
      const oldId = idOf('file.txt');
      await writeFile(join(w.share, '.file.txt.tmp'), 'version 2, saved atomically');
      await rename(join(w.share, '.file.txt.tmp'), join(w.share, 'file.txt'));
      await settle('an atomic save');
      expect(uploads() - before).toBe(1);
      expect(idOf('file.txt')).not.toBe(oldId);
      expect(w.emu.store.getDocument(oldId!)).toBeUndefined();
      expect(d.stdout()).not.toContain('.file.txt.tmp');
    }

    // 8. A file rewritten 100 times quickly: the final content, in very few uploads.
    {
      const before = uploads();
      let content = '';
      for (let i = 0; i < 100; i++) {
        content = `rewrite ${i}\n`;
        await writeFile(join(w.share, 'hot.txt'), content);
      }
      await settle('100 quick rewrites');
      expect(docAt(w, 'hot.txt')[0]?.metadata.dssync_sha256).toBe(sha(content));
      expect(uploads() - before).toBeLessThanOrEqual(3);
    }

    // 9. 1,000 files moved at once (one by one, from one folder to another): renames only.
    {
      await mkdir(join(w.share, 'bulk-from'), { recursive: true });
      for (let i = 0; i < 1000; i++) await writeFile(join(w.share, 'bulk-from', `f${i}.txt`), `bulk file ${i}\n`);
      await settle('1,000 new files');
      const before = uploads();
      const idsBefore = new Map(fileDocuments(w.emu, w.dataSourceId()).map((doc) => [doc.metadata.dssync_path, doc.document_id]));
      await mkdir(join(w.share, 'bulk-to'), { recursive: true });
      for (let i = 0; i < 1000; i++) await rename(join(w.share, 'bulk-from', `f${i}.txt`), join(w.share, 'bulk-to', `f${i}.txt`));
      await settle('1,000 files moved');
      expect(uploads()).toBe(before);
      const idsAfter = new Map(fileDocuments(w.emu, w.dataSourceId()).map((doc) => [doc.metadata.dssync_path, doc.document_id]));
      for (const i of [0, 499, 999]) expect(idsAfter.get(`bulk-to/f${i}.txt`)).toBe(idsBefore.get(`bulk-from/f${i}.txt`));
    }

    // 10. A file replaced by a folder of the same name, and back.
    {
      await w.write('shape.txt', 'I am a file');
      await settle('shape.txt as a file');
      await rm(join(w.share, 'shape.txt'));
      await w.write('shape.txt/inside.txt', 'I am inside a folder');
      await settle('shape.txt turned into a folder');
      expect(docAt(w, 'shape.txt')).toEqual([]);
      await rm(join(w.share, 'shape.txt'), { recursive: true });
      await w.write('shape.txt', 'a file again');
      await settle('shape.txt a file again');
      expect(docAt(w, 'shape.txt/inside.txt')).toEqual([]);
    }

    expect((await d.healthz()).body).toMatchObject({ status: 'ok', reasons: [] });
    const { code } = await d.stop();
    expect(code).toBe(0);
  });
});
