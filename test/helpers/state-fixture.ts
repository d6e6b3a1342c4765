/**
 * A state file set up by hand, for tests and benches: the text of a state in the current
 * format, made by the real encoder (src/state/encoder.ts), so a fixture cannot drift from
 * what dssync writes and reads. Older formats are made from this text (state-v3.ts); a
 * corrupt state is this text damaged (`cutShort`). No fixture writes one JSON object: that
 * format (1 and 2) is no longer read (issue 27.7).
 */
import { encodeStateToString } from '../../src/state/encoder.js';
import type { FileEntry, Intent, MappingState, PassRecord, RejectedFile, StateFile, StateIdentity } from '../../src/state/schema.js';
import { newMappingState, newState } from '../../src/state/validate.js';

/** One mapping of a fixture: its data source and folder, and what it records (all optional). */
export interface FixtureMapping {
  dataSourceId: string;
  root: string;
  files?: Record<string, FileEntry>;
  intents?: Record<string, Intent>;
  rejected?: Record<string, RejectedFile>;
  lastPass?: PassRecord;
  sessions?: Record<string, number>;
}

export interface FixtureOptions {
  journalSeq?: number;
  identity?: StateIdentity;
}

/** The state of `mappings` (keyed by mapping id). */
export function fixtureState(mappings: Record<string, FixtureMapping> = {}, opts: FixtureOptions = {}): StateFile {
  const s = newState();
  s.journalSeq = opts.journalSeq ?? 0;
  if (opts.identity) s.identity = opts.identity;
  for (const [id, f] of Object.entries(mappings)) {
    const m: MappingState = newMappingState(f.dataSourceId, f.root);
    for (const [path, e] of Object.entries(f.files ?? {})) m.files.set(path, e);
    Object.assign(m.intents, f.intents);
    Object.assign(m.rejected, f.rejected);
    if (f.lastPass) m.lastPass = f.lastPass;
    if (f.sessions) m.sessions = { ...f.sessions };
    s.mappings[id] = m;
  }
  return s;
}

/** The file's text of the state of `mappings`, as dssync writes it. */
export function stateFileText(mappings: Record<string, FixtureMapping> = {}, opts: FixtureOptions = {}): string {
  return encodeStateToString(fixtureState(mappings, opts));
}

/** `text` cut in the middle of a line, as a write without fsync leaves it at a crash: corrupt (no end line). */
export function cutShort(text: string): string {
  const half = text.slice(0, Math.ceil(text.length / 2));
  return half.endsWith('\n') ? half.slice(0, -1) : half;
}

/** A corrupt state file: one mapping's state cut short. */
export function corruptStateText(): string {
  return cutShort(stateFileText({ m: { dataSourceId: 'ds-1', root: '/srv/m', files: { 'a.txt': { documentId: 'doc-1', size: 1, mtimeMs: 1, sha256: 'a'.repeat(64), syncedAt: '2026-01-01T00:00:00.000Z' } } } }));
}

/** A state file overwritten with garbage after its header (the chaos case state-corrupted): corrupt. */
export function garbageStateText(): string {
  const header = stateFileText().split('\n')[0] ?? '';
  return `${header}\n{"mapping":"x", garbage \u0000\u0001`;
}
