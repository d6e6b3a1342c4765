/**
 * Coverage of a mapping for `dssync status --coverage`, the page's panel and the dry run's table (docs/status.md, "Coverage"): the
 * inputs of engine/coverage.ts gathered from the mapped folder (a walk of names and sizes,
 * nothing hashed), the mapping's filter, the state file (read without its lock) and the
 * text check of the PDFs sent as they are (daemon/mapping/text-check.ts, in conversion workers).
 */
import PQueue from 'p-queue';
import type { MappingConfig } from '../../config/types.js';
import { conversionOf } from '../../convert/policy.js';
import { coverageOf, totalOf, type CoverageCounts, type CoverageRow } from '../../engine/coverage.js';
import { checksText, checkTextLayer } from '../mapping/text-check.js';
import { createFilter, loadFilter } from '../../local/filters.js';
import { walkTree } from '../../local/walk.js';
import type { MappingState } from '../../state/schema.js';

export interface MappingCoverage {
  mappingId: string;
  path: string;
  /** Why the folder could not be looked at (nothing counted). */
  error?: string | undefined;
  rows: CoverageRow[];
  total: CoverageCounts;
}

/** PDFs checked at once (each in a conversion worker; two stay warm). */
const CHECKS_AT_ONCE = 2;

/**
 * The coverage of one mapping. `state` is the mapping's state (absent before its first
 * sync); `planned`: a dry run, where every file the pass would send counts as sent.
 */
export async function mappingCoverage(mapping: MappingConfig, state: MappingState | undefined, planned: boolean): Promise<MappingCoverage> {
  const base = { mappingId: mapping.id, path: mapping.path };
  let walked: Awaited<ReturnType<typeof walkTree>>;
  let filter: Awaited<ReturnType<typeof loadFilter>>;
  try {
    filter = await loadFilter(mapping);
    // Every file but hidden, temporary and system ones: what the mapping leaves out is counted too.
    walked = await walkTree(mapping.path, createFilter({ include: ['**/*'], exclude: [], ignoreFile: mapping.ignoreFile }), { followSymlinks: mapping.followSymlinks });
  } catch (e) {
    return { ...base, error: e instanceof Error ? e.message : String(e), rows: [], total: totalOf([]) };
  }
  if (walked.rootStatus !== 'ok') return { ...base, error: walked.rootError?.message ?? `the folder is ${walked.rootStatus}`, rows: [], total: totalOf([]) };
  const files = [...walked.files.values()];
  const tracked = new Set<string>();
  for (const [path] of state?.files ?? []) tracked.add(path);
  const refusedNow = (path: string): string | undefined => {
    const r = state?.rejected[path];
    const f = walked.files.get(path);
    // A refusal holds until the file changes (its size or mtime).
    return r !== undefined && f !== undefined && r.size === f.size && r.mtimeMs === f.mtimeMs ? r.reason : undefined;
  };
  const included = (path: string): boolean => filter.includes(path, false);
  const sent = (path: string): boolean => planned || tracked.has(path);
  const layers = new Map<string, 'text' | 'no-text' | 'unchecked'>();
  const toCheck = files.filter((f) => included(f.path) && f.size <= mapping.maxFileBytes && sent(f.path) && refusedNow(f.path) === undefined && checksText(f.path, mapping.formats) && conversionOf(f.path, mapping.formats) === undefined);
  await new PQueue({ concurrency: CHECKS_AT_ONCE }).addAll(
    toCheck.map((f) => async () => {
      const r = await checkTextLayer(mapping.path, f.path, mapping.followSymlinks);
      if (r !== undefined) layers.set(f.path, r.kind);
    }),
  );
  const rows = coverageOf({
    files,
    included,
    formats: mapping.formats,
    maxFileBytes: mapping.maxFileBytes,
    sent,
    refused: refusedNow,
    textLayer: (path) => layers.get(path),
  });
  return { ...base, rows, total: totalOf(rows) };
}
