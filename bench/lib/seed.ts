/**
 * A finished first mirror, written directly (scale, issue 16): the state file and the data
 * source's documents exactly as `dssync sync` leaves them over a tree — every file's
 * document with its name, url and metadata, every state entry with the stat and hash time
 * that let the next pass vouch for it without reading. What a restart over a million
 * files is measured from, when the first mirror itself would take hours on this machine.
 * Then what the first mirror leaves for the mapping's lease, by a real `dssync sync` over
 * it (leaveFirstLease).
 */
import { lstat, mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { documentFields, type DocumentFieldsSpec } from '../../src/engine/document-fields.js';
import { installationIdFor } from '../../src/engine/installation.js';
import type { RunningEmulator } from '@dssync/emulator';
import type { StoreSnapshot } from '@dssync/emulator';
import { StateCodec } from '../../src/state/encoder.js';
import type { FileEntry } from '../../src/state/schema.js';
import { newMappingState, newState } from '../../src/state/validate.js';
import { isLeaseDocument } from '../../src/engine/lease-view.js';
import { leaseRecordOf } from '../../src/engine/lease.js';
import { ORG, runSync } from './dssync.js';
import { countLeaseWrites, writeRequests } from './service.js';
import { contentFor, sha256, type TreeFile } from './tree.js';
import { mapLimit } from './util.js';

/**
 * Writes the state at `statePath` and fills the (empty) emulator; the tree's files must be
 * hashed safely after their last change (racy.ts) by `hashedAt`. Returns the emulator's
 * snapshot it restored (a kept set saves it: lib/kept-set.ts).
 */
export async function seedFirstMirror(opts: {
  emu: RunningEmulator;
  share: string;
  files: readonly TreeFile[];
  statePath: string;
  mappingId: string;
  dataSourceName: string;
  hashedAt: number;
}): Promise<StoreSnapshot> {
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
    const synced = syncedFile(spec, { path: f.rel, sha256: hash, documentId: id, dataSourceId: dsId, now, seq: i + 2, hashedAt: opts.hashedAt }, st);
    m.files.set(f.rel, synced.entry);
    snap.documents[i] = synced.document;
  });
  state.mappings[opts.mappingId] = m;
  await mkdir(dirname(opts.statePath), { recursive: true, mode: 0o700 });
  await writeFile(opts.statePath, Buffer.concat(new StateCodec().encode(state)), { mode: 0o600 });
  (emu.store as unknown as { restore(s: StoreSnapshot): void }).restore(snap);
  return snap;
}

/**
 * What a first mirror leaves for the mapping's lease (docs/reliability.md, "The lease"): its
 * marker document in the data source, released, and the marker's id kept beside the state
 * (with the identity file and the first pass's record). Left by a real `dssync sync`
 * (`configPath`, on the seeded state) over the seeded mirror: it finds no marker, makes one,
 * claims it, runs a pass with nothing to do, and releases it. Throws when it wrote anything
 * but its lease (the seed is not what a first mirror leaves) or left no released marker.
 * Returns the emulator's store as it left it (a kept set saves it).
 */
export async function leaveFirstLease(emu: RunningEmulator, configPath: string, env: Record<string, string> = {}): Promise<StoreSnapshot> {
  const lease = countLeaseWrites(emu);
  const before = writeRequests(emu);
  try {
    const run = await runSync(configPath, env);
    if (run.code !== 0) throw new Error(`the first mirror's lease: dssync sync exited ${run.code}:\n${run.stderr.slice(-3000)}`);
    const mirrorWrites = writeRequests(emu) - before - lease.count();
    if (mirrorWrites !== 0) throw new Error(`the first mirror's lease: dssync sync over the seeded mirror made ${mirrorWrites} write(s) besides its lease's: the seed is not what a first mirror leaves`);
  } finally {
    lease.stop();
  }
  const snap = (emu.store as unknown as { snapshot(): StoreSnapshot }).snapshot();
  const released = snap.documents.filter((d) => isLeaseDocument(d) && leaseRecordOf(d)?.released === true);
  if (released.length !== 1) throw new Error(`the first mirror's lease: dssync sync left ${released.length} released lease marker(s) in the data source, expected 1`);
  return snap;
}

/**
 * A file as a first mirror leaves it: its state entry and its document in the emulator's
 * store (with dssync's name, url and metadata), for the benches that seed instead of syncing.
 */
export function syncedFile(
  spec: DocumentFieldsSpec,
  f: { path: string; sha256: string; documentId: string; dataSourceId: string; now: string; seq: number; hashedAt: number | undefined },
  st: { size: number; mtimeMs: number; ctimeMs: number; dev: number; ino: number },
): { entry: FileEntry; document: StoreSnapshot['documents'][number] } {
  const fields = documentFields(spec, { path: f.path, size: st.size, mtimeMs: st.mtimeMs, sha256: f.sha256 });
  return {
    entry: { documentId: f.documentId, size: st.size, mtimeMs: st.mtimeMs, sha256: f.sha256, syncedAt: f.now, hashedAt: f.hashedAt, ctimeMs: st.ctimeMs, dev: st.dev, ino: st.ino },
    document: {
      document_id: f.documentId,
      data_source_id: f.dataSourceId,
      name: fields.name,
      url: fields.url,
      metadata: fields.metadata,
      content_type: 'text/plain',
      size: st.size,
      status: 'ready',
      failure_reason: null,
      created_at: f.now,
      updated_at: f.now,
      org_id: ORG,
      seq: f.seq,
      chunks: [],
    },
  };
}
