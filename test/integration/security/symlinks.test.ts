/**
 * Security: symbolic links never lead outside a mapping. Whatever links someone with write
 * access to the share plants (to a file or a folder outside, to the parent, in a loop), and
 * even when a planned file is swapped for such a link between the scan and the upload,
 * no content from outside the mapped folder reaches the service.
 */
import { mkdir, rename, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createClientFromConfig } from '../../../src/compose/client.js';
import { loadConfig } from '../../../src/config/load.js';
import { documentFields } from '../../../src/engine/document-fields.js';
import { Mirror } from '../../../src/engine/mirror.js';
import type { LocalSide } from '../../../src/engine/local-side.js';
import { createLocalSide } from '../../../src/local/side.js';
import { silentLogger } from '../../../src/log.js';
import { StateStore } from '../../../src/state/store.js';
import { createWorkspace, type Workspace, fileDocuments, filesUploaded } from '../../helpers/mirror-check.js';

const SECRET = 'TOP-SECRET-OUTSIDE-THE-MAPPING';
let ws: Workspace | undefined;
afterEach(async () => {
  await ws?.close();
  ws = undefined;
});

/** Every chunk of text the service holds for the data source. */
function serviceText(w: Workspace): string {
  const ds = w.emu.store.listDataSources().find((d) => d.name === 'Share');
  if (!ds) return '';
  return fileDocuments(w.emu, ds.data_source_id)
    .flatMap((d) => w.emu.store.listChunks(d.document_id).map((c) => c.text))
    .join('\n');
}

function documentPaths(w: Workspace): string[] {
  const ds = w.emu.store.listDataSources().find((d) => d.name === 'Share');
  return ds ? fileDocuments(w.emu, ds.data_source_id).map((d) => String(d.metadata?.dssync_path ?? d.name)) : [];
}

/** One full pass in process, with the local side wrapped by `wrap`. */
async function pass(w: Workspace, wrap: (l: LocalSide) => LocalSide = (l) => l) {
  const config = loadConfig({ file: w.configPath, env: w.env });
  const m = config.mappings[0]!;
  const api = createClientFromConfig(config);
  const state = await StateStore.open(config.statePath);
  try {
    const ds = (await api.listDataSources()).find((d) => d.name === 'Share') ?? (await api.createDataSource({ name: 'Share', llmConnectorIds: ['c'] }));
    const mirror = new Mirror({
      spec: { mappingId: m.id, root: m.path, dataSourceId: ds.id, prune: 'ours', maxDeletePercent: 100, massDeleteMinimum: 10, batchFiles: 20, batchBytes: 1 << 24, concurrency: 2 },
      api,
      state,
      local: wrap(createLocalSide(m)),
      logger: silentLogger,
      now: Date.now,
      monotonic: () => performance.now(),
    });
    return await mirror.fullPass();
  } finally {
    await state.close();
    await api.close();
  }
}

async function plantLinks(w: Workspace): Promise<void> {
  const outside = join(w.dir, 'outside');
  await mkdir(join(outside, 'folder'), { recursive: true });
  await writeFile(join(outside, 'secret.txt'), SECRET);
  await writeFile(join(outside, 'folder', 'inner.txt'), SECRET);
  await w.write('real.txt', 'a real document');
  await symlink(join(outside, 'secret.txt'), join(w.share, 'to-outside-file.txt'));
  await symlink(join(outside, 'folder'), join(w.share, 'to-outside-folder'));
  await symlink('..', join(w.share, 'to-parent'));
  await symlink('.', join(w.share, 'loop'));
  await symlink(join(w.share, 'real.txt'), join(w.share, 'inside-link.txt'));
}

describe('security: symbolic links', () => {
  for (const followSymlinks of [false, true]) {
    it(`links planted in the share never bring outside content in (followSymlinks ${followSymlinks})`, async () => {
      ws = await createWorkspace({ mapping: { followSymlinks } });
      await plantLinks(ws);
      const r = await pass(ws);
      expect(serviceText(ws)).not.toContain(SECRET);
      const paths = documentPaths(ws).sort();
      // Following links, a link to a file inside the mapping is mirrored like the file.
      expect(paths).toEqual(followSymlinks ? ['inside-link.txt', 'real.txt'] : ['real.txt']);
      if (followSymlinks) {
        // Links leading outside are not documents: excluded, and named once so the operator knows.
        expect(r.skipped.map((s) => s.path).sort()).toEqual(['to-outside-file.txt', 'to-outside-folder', 'to-parent']);
        expect(r.skipped.every((s) => s.excluded === true)).toBe(true);
      }
    });
  }

  it('a file swapped for a link to an outside file of the same size and time, after it was hashed, is not sent', async () => {
    ws = await createWorkspace();
    const w = ws;
    await w.write('report.txt', 'x'.repeat(SECRET.length));
    const outside = join(w.dir, 'outside.txt');
    await writeFile(outside, SECRET);
    const r = await pass(w, (local) => ({
      ...local,
      async hash(file) {
        const h = await local.hash(file);
        // The attacker's move, between the hash and the upload: same size, same mtime.
        const st = await stat(join(w.share, file.path));
        await utimes(outside, st.atimeMs / 1000, st.mtimeMs / 1000);
        await rm(join(w.share, file.path));
        await symlink(outside, join(w.share, file.path));
        return h;
      },
    }));
    // Nothing was sent for it: the path is a link now, so it is not a document at all.
    expect(filesUploaded(w.emu)).toBe(0);
    expect(documentPaths(w)).toEqual([]);
    expect(serviceText(w)).not.toContain(SECRET);
    expect(JSON.stringify(r.failures) + JSON.stringify(r.skipped)).not.toContain(SECRET);
  });

  it('a folder swapped for a link to an outside folder, after its file was hashed, is not followed for the upload', async () => {
    ws = await createWorkspace();
    const w = ws;
    await w.write('team/notes.txt', 'y'.repeat(SECRET.length));
    const outside = join(w.dir, 'elsewhere');
    await mkdir(outside);
    await writeFile(join(outside, 'notes.txt'), SECRET);
    await pass(w, (local) => ({
      ...local,
      async hash(file) {
        const h = await local.hash(file);
        const st = await stat(join(w.share, file.path));
        await utimes(join(outside, 'notes.txt'), st.atimeMs / 1000, st.mtimeMs / 1000);
        await rename(join(w.share, 'team'), join(w.dir, 'team-moved'));
        await symlink(outside, join(w.share, 'team'));
        return h;
      },
    }));
    expect(filesUploaded(w.emu)).toBe(0);
    expect(documentPaths(w)).toEqual([]);
    expect(serviceText(w)).not.toContain(SECRET);
  });

  it('documentFields never carries the target of a link (name, url and metadata name the path in the mapping)', () => {
    const f = documentFields({ mappingId: 'm', root: '/srv/share' }, { path: 'inside-link.txt', size: 1, mtimeMs: 1, sha256: 'h' });
    expect(f.url).toBe('file:///srv/share/inside-link.txt');
    expect(f.metadata.dssync_path).toBe('inside-link.txt');
  });
});
