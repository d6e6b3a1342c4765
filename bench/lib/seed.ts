/**
 * A finished first mirror, written directly (scale, issue 16): the state file and the data
 * source's documents exactly as `dssync sync` leaves them over a tree — every file's
 * document with its name, url and metadata, every state entry with the stat and hash time
 * that let the next pass vouch for it without reading. What a restart over a million
 * files is measured from, when the first mirror itself would take hours on this machine.
 */
import { lstat, mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { documentFields } from '../../src/engine/document-fields.js';
import { installationIdFor } from '../../src/engine/installation.js';
import type { RunningEmulator } from '../../src/emulator/index.js';
import type { StoreSnapshot } from '../../src/emulator/store.js';
import { StateCodec } from '../../src/state/encoder.js';
import { newMappingState, newState } from '../../src/state/validate.js';
import { ORG } from './dssync.js';
import { contentFor, sha256, type TreeFile } from './tree.js';
import { mapLimit } from './util.js';

/** Writes the state at `statePath` and fills the (empty) emulator; the tree's files must be hashed safely after their last change (racy.ts) by `hashedAt`. */
export async function seedFirstMirror(opts: {
  emu: RunningEmulator;
  share: string;
  files: readonly TreeFile[];
  statePath: string;
  mappingId: string;
  dataSourceName: string;
  hashedAt: number;
}): Promise<void> {
  const { emu, share, files } = opts;
  const dsId = 'ds_5eeded00000000000000000000000000';
  const spec = { mappingId: opts.mappingId, installationId: installationIdFor(opts.statePath), root: share };
  const now = new Date(opts.hashedAt).toISOString();
  const snap: StoreSnapshot = {
    format: 'dssync-emulator-store',
    version: 1,
    seq: 1,
    dataSources: [{ data_source_id: dsId, name: opts.dataSourceName, llm_connector_ids: ['conn-1'], created_at: now, updated_at: now, org_id: ORG, seq: 1 }],
    documents: [],
    apps: [],
  };
  const state = newState();
  const m = newMappingState(dsId, share);
  await mapLimit(files, 64, async (f, i) => {
    const st = await lstat(join(share, f.rel));
    const hash = sha256(contentFor(f.rel, f.size, 0));
    const id = `doc_${i.toString(16).padStart(32, '0')}`;
    m.files[f.rel] = { documentId: id, size: st.size, mtimeMs: st.mtimeMs, sha256: hash, syncedAt: now, hashedAt: opts.hashedAt, ctimeMs: st.ctimeMs, dev: st.dev, ino: st.ino };
    const fields = documentFields(spec, { path: f.rel, size: st.size, mtimeMs: st.mtimeMs, sha256: hash });
    snap.documents[i] = {
      document_id: id,
      data_source_id: dsId,
      name: fields.name,
      url: fields.url,
      metadata: fields.metadata,
      content_type: 'text/plain',
      size: st.size,
      status: 'ready',
      failure_reason: null,
      created_at: now,
      updated_at: now,
      org_id: ORG,
      seq: i + 2,
      chunks: [],
    };
  });
  state.mappings[opts.mappingId] = m;
  await mkdir(dirname(opts.statePath), { recursive: true, mode: 0o700 });
  await writeFile(opts.statePath, Buffer.concat(new StateCodec().encode(state)), { mode: 0o600 });
  (emu.store as unknown as { restore(s: StoreSnapshot): void }).restore(snap);
}
