/**
 * Issue 35.5: the converter's identity is part of what decides "unchanged". A document names
 * the conversion it was sent with (metadata.ts META.converter); a change of the mapping's
 * formats (or of a converter's version or options) re-sends the converted files once, and
 * nothing else; a restart, a rescan or a rebuilt state converts nothing again.
 */
import { describe, expect, it } from 'vitest';
import type { DocumentRecord } from '../../../src/api/records.js';
import { converterIdentity } from '../../../src/convert/formats.js';
import { DEFAULT_LIMITS } from '../../../src/convert/limits.js';
import type { Formats } from '../../../src/convert/policy.js';
import { documentFields, type DocumentFieldsSpec } from '../../../src/engine/document-fields.js';
import { META } from '../../../src/engine/metadata.js';
import { confirmedPath, ownerOfListing, planMirror, type LocalFileInfo, type Op, type PlanInput } from '../../../src/engine/plan.js';
import { FileTable } from '../../../src/state/file-table.js';
import type { FileEntry } from '../../../src/state/schema.js';

const SHA = { csv: 'a'.repeat(64), txt: 'b'.repeat(64), xlsx: 'c'.repeat(64) };
const PATHS = { csv: 'sales/q3.csv', txt: 'notes/read-me.txt', xlsx: 'finance/budget.xlsx' };

const specOf = (formats: Formats | undefined): DocumentFieldsSpec => ({ mappingId: 'm1', root: '/srv/share', formats });
const local = (path: string, sha256: string): LocalFileInfo => ({ path, diskPath: `/srv/share/${path}`, size: 10, mtimeMs: 1000, ctimeMs: 1000, dev: 1, ino: path.length, sha256, hashedAt: 5000 });

/** The service and the state after a pass under `spec` carried out its plan (what the executor writes). */
class World {
  docs = new Map<string, DocumentRecord>();
  files: Record<string, FileEntry> = {};
  private nextId = 1;

  send(spec: DocumentFieldsSpec, path: string, sha256: string): void {
    const old = this.files[path]?.documentId;
    if (old !== undefined) this.docs.delete(old);
    const id = `doc-${this.nextId++}`;
    const f = documentFields(spec, { path, sha256, size: 10, mtimeMs: 1000 });
    this.docs.set(id, { id, name: f.name, url: f.url, metadata: f.metadata, raw: {} });
    this.files[path] = { documentId: id, sha256, size: 10, mtimeMs: 1000, syncedAt: '2026-11-28T00:00:00.000Z', hashedAt: 5000, ctimeMs: 1000, dev: 1, ino: path.length };
  }

  /** A full pass's plan: every file hashed, the whole listing. */
  plan(spec: DocumentFieldsSpec, extra: Partial<PlanInput> = {}): ReturnType<typeof planMirror> {
    return planMirror({
      mappingId: 'm1',
      local: new Map(Object.entries(PATHS).map(([k, p]) => [p, local(p, SHA[k as keyof typeof SHA])])),
      state: { files: FileTable.of(this.files), intents: {}, rejected: {} },
      remote: [...this.docs.values()],
      desired: (f) => documentFields(spec, f),
      prune: 'ours',
      ...extra,
    });
  }

  /** Carries out the sends of a plan. */
  execute(spec: DocumentFieldsSpec, ops: Op[]): void {
    for (const op of ops) if (op.kind === 'upload' || op.kind === 'replace') this.send(spec, op.path, op.file.sha256!);
  }
}

const sends = (ops: Op[]): string[] => ops.map((op) => `${op.kind} ${op.path}`).sort();

function mirrored(spec: DocumentFieldsSpec): World {
  const w = new World();
  w.execute(spec, w.plan(spec).ops);
  expect(w.plan(spec).ops).toEqual([]);
  return w;
}

describe('the conversion decides "unchanged"', () => {
  it('a converted document names its converter; a file sent as it is names none', () => {
    const w = mirrored(specOf(undefined));
    const meta = (path: string) => [...w.docs.values()].find((d) => d.name === path)?.metadata?.[META.converter];
    expect(meta(PATHS.xlsx)).toBe(converterIdentity('xlsx', DEFAULT_LIMITS));
    expect(meta(PATHS.csv)).toBe(converterIdentity('csv', DEFAULT_LIMITS));
    expect(meta(PATHS.txt)).toBeUndefined();
  });

  it('a change of the formats re-sends the files it converts differently, once; then nothing', () => {
    const before = specOf({ '.csv': 'as-is' });
    const w = mirrored(before);
    const after = specOf(undefined);
    const p = w.plan(after);
    expect(sends(p.ops)).toEqual([`replace ${PATHS.csv}`]);
    w.execute(after, p.ops);
    expect(w.plan(after).ops).toEqual([]);
    // And back: the converted document is replaced by the file as it is, once.
    const back = w.plan(before);
    expect(sends(back.ops)).toEqual([`replace ${PATHS.csv}`]);
    w.execute(before, back.ops);
    expect(w.plan(before).ops).toEqual([]);
  });

  it("a converter's new identity (its version or options) re-sends its documents once", () => {
    const spec = specOf(undefined);
    const w = mirrored(spec);
    // What an older converter of sheets wrote: the same file, another identity.
    const sheet = [...w.docs.values()].find((d) => d.name === PATHS.xlsx)!;
    sheet.metadata = { ...sheet.metadata, [META.converter]: converterIdentity('xlsx', { ...DEFAULT_LIMITS, rowsPerSheet: 10 }) };
    const p = w.plan(spec);
    expect(sends(p.ops)).toEqual([`replace ${PATHS.xlsx}`]);
    w.execute(spec, p.ops);
    expect(w.plan(spec).ops).toEqual([]);
  });

  it('a document of a release that converted nothing (no converter named) is a file sent as it is', () => {
    const asIs = specOf({ '.csv': 'as-is' });
    const w = mirrored(asIs);
    for (const d of w.docs.values()) if (d.name !== PATHS.xlsx) expect(d.metadata?.[META.converter]).toBeUndefined();
    // The upgrade converts .csv by default: that one file is sent again; the .txt is not.
    expect(sends(w.plan(specOf(undefined)).ops)).toEqual([`replace ${PATHS.csv}`]);
  });

  it('a restart (files vouched by the state, documents confirmed by the listing) converts nothing again', () => {
    const spec = specOf(undefined);
    const w = mirrored(spec);
    const files = FileTable.of(w.files);
    const remote = [...w.docs.values()];
    const whose = ownerOfListing({ mappingId: 'm1', state: { files, intents: {}, rejected: {} }, remote });
    const desired = (f: Parameters<PlanInput['desired']>[0]) => documentFields(spec, f);
    const confirmed = new Set(remote.map((d) => confirmedPath(d, whose, { desired, files })).filter((p): p is string => p !== undefined));
    expect(confirmed).toEqual(new Set(Object.values(PATHS)));
    const vouched = new Set(Object.values(PATHS));
    const r = w.plan(spec, { local: new Map(), vouched, confirmed, remote: [] });
    expect(r.ops).toEqual([]);
    expect(r.unchanged).toBe(3);
    // After a change of the formats, the confirmed set no longer holds the .csv: it is planned, and re-sent.
    const asIs = specOf({ '.csv': 'as-is' });
    const stillConfirmed = remote.filter((d) => confirmedPath(d, whose, { desired: (f) => documentFields(asIs, f), files }) !== undefined);
    expect(stillConfirmed.map((d) => d.name).sort()).toEqual([PATHS.xlsx, PATHS.txt].sort());
  });

  it('a state rebuilt from the listing (entries without stat) converts nothing again', () => {
    const spec = specOf(undefined);
    const w = mirrored(spec);
    // What rebuild.ts records: document id, size, mtime and hash from the metadata.
    for (const [path, e] of Object.entries(w.files)) w.files[path] = { documentId: e.documentId, size: e.size, mtimeMs: e.mtimeMs, sha256: e.sha256, syncedAt: e.syncedAt };
    const r = w.plan(spec);
    expect(r.ops).toEqual([]);
    expect(r.unchanged).toBe(3);
  });

  it('a converted file moved to an extension sent as it is is sent again, not renamed', () => {
    const spec = specOf(undefined);
    const w = mirrored(spec);
    const r = planMirror({
      mappingId: 'm1',
      local: new Map([[PATHS.txt, local(PATHS.txt, SHA.txt)], [PATHS.xlsx, local(PATHS.xlsx, SHA.xlsx)], ['sales/q3.txt', local('sales/q3.txt', SHA.csv)]]),
      state: { files: FileTable.of(w.files), intents: {}, rejected: {} },
      remote: [...w.docs.values()],
      desired: (f) => documentFields(spec, f),
      prune: 'ours',
    });
    expect(sends(r.ops)).toEqual(['delete sales/q3.csv', 'upload sales/q3.txt']);
  });
});
