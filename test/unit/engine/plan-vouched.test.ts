/**
 * The restart's compact inputs (issue 16): files the walk found exactly as their state
 * entries say (PlanInput.vouched) and documents the listing showed exactly as the state says
 * (PlanInput.confirmed) are handed to the planner as paths, not records. The plan must be the
 * very plan made from the whole records, whatever else the folder and the data source hold:
 * other documents at the same paths, people's documents, other owners, lost uploads, files
 * set aside, refused files, renames.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DocumentRecord } from '../../../src/api/records.js';
import { documentFields, markUploadName } from '../../../src/engine/document-fields.js';
import { confirmedPath, ownerOfListing, planMirror, vouchedByEntry, type LocalFileInfo, type MutablePathSet, type PlanInput, type PlanResult } from '../../../src/engine/plan.js';
import type { FileEntry, Intent, MappingState } from '../../../src/state/schema.js';
import { FileTable } from '../../../src/state/file-table.js';

const MAPPING = 'm1';
const INSTALLATION = 'inst-1';
const ROOT = '/srv/share';
const spec = { mappingId: MAPPING, installationId: INSTALLATION, root: ROOT };
const desired: PlanInput['desired'] = (f) => documentFields(spec, f);
const NOW = 10_000_000;
const PATHS = ['a.txt', 'b.txt', 'd/c.txt', 'd/e.txt', 'f.txt'] as const;
const HASHES = ['h1', 'h2', 'h3'] as const;

/** What one path holds in the state, the folder and the data source. */
interface PathCase {
  entry: { hash: (typeof HASHES)[number]; racy: boolean; oldFormat: boolean } | null;
  /** 'same': the entry's stat exactly; 'touched': another mtime, same content; 'changed': other content. */
  local: 'none' | 'same' | 'touched' | 'changed';
  localHash: (typeof HASHES)[number];
  docs: ('exact' | 'stale' | 'wrong-url' | 'moved-here' | 'unmarked-entry' | 'person' | 'other-mapping' | 'other-installation' | 'lost-upload')[];
  /** When the path is set aside (its flag below): by a setting, not waiting to be read. */
  excluded: boolean;
  rejected: boolean;
}

const pathCase: fc.Arbitrary<PathCase> = fc.record({
  entry: fc.option(fc.record({ hash: fc.constantFrom(...HASHES), racy: fc.boolean(), oldFormat: fc.boolean() }), { freq: 4 }),
  local: fc.constantFrom('none', 'same', 'same', 'same', 'touched', 'changed'),
  localHash: fc.constantFrom(...HASHES),
  docs: fc.array(fc.constantFrom('exact', 'exact', 'exact', 'stale', 'wrong-url', 'moved-here', 'unmarked-entry', 'person', 'other-mapping', 'other-installation', 'lost-upload'), { maxLength: 3 }),
  excluded: fc.boolean(),
  rejected: fc.boolean(),
});

/**
 * `asMarks`: the compact form as a restart's mirror builds it: both sets are the state's marks
 * (EntryMarks of one table, which the plan counts row by row), and `untouchable` is given only
 * when some path is set aside.
 */
function world(cases: readonly PathCase[], untouchableFlags: readonly boolean[], prune: 'ours' | 'all', asMarks = false) {
  const files: Record<string, FileEntry> = Object.create(null) as Record<string, FileEntry>;
  const local = new Map<string, LocalFileInfo>();
  const remote: DocumentRecord[] = [];
  const intents: Record<string, Intent> = {};
  const rejected: MappingState['rejected'] = {};
  const untouchable = new Set<string>();
  const excluded = new Set<string>();
  let n = 0;
  const id = (): string => `doc-${String(++n).padStart(3, '0')}`;
  const ours = (docId: string, path: string, sha256: string, over: Partial<DocumentRecord> = {}, meta: Record<string, string> = {}): DocumentRecord => {
    const f = documentFields(spec, { path, sha256, size: 10, mtimeMs: 1000 });
    return { id: docId, name: f.name, url: f.url, metadata: { ...f.metadata, ...meta }, raw: { size: 10 }, ...over };
  };

  cases.forEach((c, i) => {
    const path = PATHS[i]!;
    const stat = { size: 10, mtimeMs: 1000, ctimeMs: 1000, dev: 7, ino: 100 + i };
    if (c.entry) {
      files[path] = {
        documentId: `entry-${i}`,
        sha256: c.entry.hash,
        ...stat,
        syncedAt: '2026-01-01T00:00:00.000Z',
        // Racy: hashed within the margin of its mtime (hashed again at every look).
        ...(c.entry.oldFormat ? {} : { hashedAt: c.entry.racy ? 1500 : 900_000 }),
      };
    }
    if (c.local === 'same') local.set(path, { path, ...stat });
    if (c.local === 'touched') local.set(path, { path, ...stat, mtimeMs: 2000, sha256: c.entry?.hash ?? c.localHash, hashedAt: NOW });
    if (c.local === 'changed') local.set(path, { path, ...stat, mtimeMs: 3000, sha256: c.localHash, hashedAt: NOW });
    // A file the planner cannot take from its entry is hashed (what the mirror does first).
    const f = local.get(path);
    if (f && f.sha256 === undefined && (!c.entry || !vouchedByEntry(files[path], f, NOW))) local.set(path, { ...f, sha256: c.localHash, hashedAt: NOW });

    for (const kind of c.docs) {
      const entryId = c.entry ? `entry-${i}` : id();
      const hash = c.entry?.hash ?? c.localHash;
      switch (kind) {
        case 'exact':
          remote.push(ours(entryId, path, hash));
          break;
        case 'stale':
          remote.push(ours(id(), path, HASHES[(HASHES.indexOf(hash) + 1) % HASHES.length]!));
          break;
        case 'wrong-url':
          remote.push(ours(entryId, path, hash, { url: 'https://elsewhere/' }));
          break;
        case 'moved-here':
          // Our document of another path's entry, its metadata naming this path.
          remote.push(ours(`entry-${(i + 1) % PATHS.length}`, path, hash));
          break;
        case 'unmarked-entry':
          remote.push({ id: entryId, name: path, metadata: {}, raw: { size: 10 } });
          break;
        case 'person':
          remote.push({ id: id(), name: path, metadata: {}, raw: { size: 10 } });
          break;
        case 'other-mapping':
          remote.push(ours(id(), path, hash, {}, { dssync_mapping: 'm2' }));
          break;
        case 'other-installation':
          remote.push(ours(entryId, path, hash, {}, { dssync_installation: 'inst-2' }));
          break;
        case 'lost-upload': {
          const uploadName = markUploadName(path, `n${i}`);
          intents[`i${i}`] = { kind: 'upload', id: `i${i}`, startedAt: '2026-01-01T00:00:00.000Z', files: [{ path, size: 10, mtimeMs: 1000, sha256: c.localHash, uploadName }] };
          remote.push({ id: id(), name: uploadName, metadata: {}, raw: { size: 10 } });
          break;
        }
      }
    }
    if (untouchableFlags[i]) untouchable.add(path);
    if (untouchableFlags[i] && c.excluded) excluded.add(path);
    if (c.rejected && f) rejected[path] = { size: f.size, mtimeMs: local.get(path)!.mtimeMs, reason: 'refused', at: '2026-01-01T00:00:00.000Z' };
  });

  // A listing holds each document once (the client keeps the first sight of an id).
  const listed = [...new Map(remote.reverse().map((d) => [d.id, d])).values()].reverse();
  remote.splice(0, remote.length, ...listed);

  const table = FileTable.of(files);
  const base: PlanInput = {
    mappingId: MAPPING,
    installationId: INSTALLATION,
    local,
    state: { files: table, intents, rejected },
    remote,
    desired,
    prune,
    untouchable: (p) => untouchable.has(p),
    excluded: (p) => excluded.has(p),
  };

  // The compact form, as the mirror builds it: vouched files out of `local` (a vouched file
  // may still be set aside: it lost a name collision's tie), confirmed documents out of `remote`.
  const vouched: MutablePathSet = asMarks ? table.marks() : new Set<string>();
  const compactLocal = new Map<string, LocalFileInfo>();
  for (const [p, f] of local) {
    if (f.sha256 === undefined && vouchedByEntry(files[p], f, NOW)) vouched.add(p);
    else compactLocal.set(p, f);
  }
  const confirmed: MutablePathSet = asMarks ? table.marks() : new Set<string>();
  const whose = ownerOfListing(base);
  const compactRemote = remote.filter((d) => {
    const p = confirmedPath(d, whose, { desired, files: table });
    if (p !== undefined) confirmed.add(p);
    return p === undefined;
  });
  const compact: PlanInput = { ...base, local: compactLocal, vouched, remote: compactRemote, confirmed, ...(asMarks && untouchable.size === 0 ? { untouchable: undefined } : {}) };
  return { base, compact, vouched, confirmed };
}

/** Order-independent: the planner's order among documents of one path may differ. */
function normal(r: PlanResult) {
  const sortBy = <T>(xs: readonly T[]): T[] => [...xs].sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
  return {
    ops: sortBy(r.ops.map((op) => (op.kind === 'replace' ? { ...op, oldDocumentIds: [...op.oldDocumentIds].sort() } : op))),
    unchanged: r.unchanged,
    refreshed: sortBy(r.refreshed),
    skippedRejected: [...r.skippedRejected].sort(),
    resolvedIntentIds: [...r.resolvedIntentIds].sort(),
    ourDocumentCount: r.ourDocumentCount,
    otherOwners: sortBy(r.otherOwners),
    intentPins: sortBy(r.intentPins),
    doubtful: r.doubtful.map((d) => d.id).sort(),
  };
}

describe('planMirror with vouched files and confirmed documents', () => {
  it('plans exactly what the whole records plan', () => {
    let compacted = 0;
    fc.assert(
      fc.property(
        fc.array(pathCase, { minLength: PATHS.length, maxLength: PATHS.length }),
        fc.array(fc.boolean(), { minLength: PATHS.length, maxLength: PATHS.length }).map((xs) => xs.map((x, i) => x && i % 2 === 0)),
        fc.constantFrom<'ours' | 'all'>('ours', 'all'),
        fc.boolean(),
        (cases, untouchableFlags, prune, asMarks) => {
          const { base, compact, vouched, confirmed } = world(cases, untouchableFlags, prune, asMarks);
          if (vouched.size > 0 || confirmed.size > 0) compacted++;
          expect(normal(planMirror(compact))).toEqual(normal(planMirror(base)));
        },
      ),
      { numRuns: 3000, seed: 16 },
    );
    // The property is about the compact form: most cases must have used it.
    expect(compacted).toBeGreaterThan(2000);
  });

  it('keeps nothing of a tree whose every file and document is as the state says, and counts them', () => {
    const cases: PathCase[] = PATHS.map(() => ({ entry: { hash: 'h1', racy: false, oldFormat: false }, local: 'same', localHash: 'h1', docs: ['exact'], excluded: false, rejected: false }));
    const { compact, vouched, confirmed } = world(cases, PATHS.map(() => false), 'ours');
    expect([vouched.size, confirmed.size, compact.local.size, compact.remote!.length]).toEqual([PATHS.length, PATHS.length, 0, 0]);
    const plan = planMirror(compact);
    expect(plan.ops).toEqual([]);
    expect([plan.unchanged, plan.ourDocumentCount]).toEqual([PATHS.length, PATHS.length]);
  });

  it("counts a restart's unchanged tree by the marks' rows, and sees the one path the walk did not vouch for", () => {
    const same: PathCase = { entry: { hash: 'h1', racy: false, oldFormat: false }, local: 'same', localHash: 'h1', docs: ['exact'], excluded: false, rejected: false };
    const all = world(PATHS.map(() => same), PATHS.map(() => false), 'ours', true);
    expect(all.confirmed.sharedWith?.(all.vouched)).toBe(PATHS.length);
    const plan = planMirror(all.compact);
    expect([plan.ops, plan.unchanged, plan.ourDocumentCount]).toEqual([[], PATHS.length, PATHS.length]);
    // One file changed on disk: not vouched, so the count falls short and the path is planned.
    const changed = world(PATHS.map((_, i) => (i === 2 ? { ...same, local: 'changed', localHash: 'h2' } : same)), PATHS.map(() => false), 'ours', true);
    expect(changed.confirmed.sharedWith?.(changed.vouched)).toBe(PATHS.length - 1);
    const replan = planMirror(changed.compact);
    expect(replan.ops.map((op) => [op.kind, op.path])).toEqual([['replace', PATHS[2]]]);
    expect(replan.unchanged).toBe(PATHS.length - 1);
    // Marks of another table are never counted row by row.
    expect(all.confirmed.sharedWith?.(changed.vouched)).toBeUndefined();
    expect(all.confirmed.sharedWith?.(new Set(PATHS))).toBeUndefined();
  });

  it('uploads again a vouched file whose document someone deleted, from its disk path', () => {
    const cases: PathCase[] = PATHS.map((_, i) => ({ entry: { hash: 'h1', racy: false, oldFormat: false }, local: 'same', localHash: 'h1', docs: i === 0 ? [] : ['exact'], excluded: false, rejected: false }));
    const { compact } = world(cases, PATHS.map(() => false), 'ours');
    const plan = planMirror(compact);
    expect(plan.ops).toEqual([{ kind: 'upload', path: 'a.txt', file: expect.objectContaining({ path: 'a.txt', sha256: 'h1' }) }]);
    expect(plan.unchanged).toBe(PATHS.length - 1);
  });

  it('deletes the confirmed document of a file deleted locally', () => {
    const cases: PathCase[] = PATHS.map((_, i) => ({ entry: { hash: 'h1', racy: false, oldFormat: false }, local: i === 1 ? 'none' : 'same', localHash: 'h1', docs: ['exact'], excluded: false, rejected: false }));
    const { compact } = world(cases, PATHS.map(() => false), 'ours');
    expect(planMirror(compact).ops).toEqual([{ kind: 'delete', path: 'b.txt', documentId: 'entry-1', reason: 'deleted-locally' }]);
  });
});
