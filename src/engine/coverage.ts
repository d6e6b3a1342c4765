/**
 * Coverage (docs/status.md, "Coverage"): per extension, what became of a mapping's files —
 * sent as they are, converted to Markdown, sent without a text layer, skipped (by the
 * mapping's settings, too big, a format dssync cannot send), failed (a conversion, a refusal
 * of the service) or not sent yet. Computed from what is known, never kept per file: the
 * folder's files, the mapping's filter and formats, the state's entries and refusals, and
 * the PDFs' text check.
 */
import { FORMATS } from '../convert/formats.js';
import { policyOf, type Formats } from '../convert/policy.js';

export interface CoverageCounts {
  /** Sent as they are (the PDFs among them without text included). */
  asIs: number;
  /** Sent converted to Markdown. */
  converted: number;
  /** Sent as they are, with no text the App can read (a scanned PDF). */
  noText: number;
  /** Sent as they are; their text layer could not be checked (a damaged PDF). */
  unchecked: number;
  skipped: { policy: number; tooBig: number; unsupported: number };
  failed: { conversion: number; refused: number };
  /** In the folder, to be sent (not yet, or at the next pass). */
  pending: number;
}

export interface CoverageRow extends CoverageCounts {
  /** Lower case with its dot (`.pdf`), or `''` for a name without one. */
  extension: string;
}

export interface CoverageFile {
  path: string;
  size: number;
}

export interface CoverageInput {
  /** Every file in the folder but hidden, temporary and system ones. */
  files: readonly CoverageFile[];
  /** The mapping's include, exclude and ignore file. */
  included: (path: string) => boolean;
  formats: Formats | undefined;
  maxFileBytes: number;
  /**
   * Sent: the files the state records (a dry run: every file the pass would send).
   */
  sent: (path: string) => boolean;
  /** Refused for the file until it changes (the state's refusals), with the reason. */
  refused: (path: string) => string | undefined;
  /** The text layer of a PDF sent as it is, when checked. */
  textLayer: (path: string) => 'text' | 'no-text' | 'unchecked' | undefined;
}

/** Why a conversion failed (api/upload.ts words it so): a refusal that is not the service's. */
const CONVERSION_FAILED = 'not converted to Markdown';

export function emptyCounts(): CoverageCounts {
  return { asIs: 0, converted: 0, noText: 0, unchecked: 0, skipped: { policy: 0, tooBig: 0, unsupported: 0 }, failed: { conversion: 0, refused: 0 }, pending: 0 };
}

export function extensionOf(path: string): string {
  const dot = path.lastIndexOf('.');
  return dot > path.lastIndexOf('/') ? path.slice(dot).toLowerCase() : '';
}

export function coverageOf(input: CoverageInput): CoverageRow[] {
  const rows = new Map<string, CoverageRow>();
  for (const f of input.files) {
    const extension = extensionOf(f.path);
    let row = rows.get(extension);
    if (!row) rows.set(extension, (row = { extension, ...emptyCounts() }));
    count(row, f, extension, input);
  }
  return [...rows.values()].sort((a, b) => a.extension.localeCompare(b.extension));
}

function count(row: CoverageRow, f: CoverageFile, extension: string, input: CoverageInput): void {
  const policy = policyOf(f.path, input.formats);
  if (!input.included(f.path)) {
    // A format dssync has no way to send (unknown, or skipped by default for want of a
    // converter) is unsupported; one the mapping's settings leave out, policy.
    const known = FORMATS[extension];
    const byMapping = input.formats?.[extension] === 'skip';
    if (!byMapping && (known === undefined || known.policy === 'skip')) row.skipped.unsupported++;
    else row.skipped.policy++;
    return;
  }
  if (f.size > input.maxFileBytes) return void row.skipped.tooBig++;
  const refusal = input.refused(f.path);
  if (refusal !== undefined) {
    if (refusal.includes(CONVERSION_FAILED)) row.failed.conversion++;
    else row.failed.refused++;
    return;
  }
  if (!input.sent(f.path)) return void row.pending++;
  if (policy === 'convert' && FORMATS[extension]?.converter !== undefined) return void row.converted++;
  row.asIs++;
  const layer = input.textLayer(f.path);
  if (layer === 'no-text') row.noText++;
  if (layer === 'unchecked') row.unchecked++;
}

/** The rows added up (a mapping's total). */
export function totalOf(rows: readonly CoverageRow[]): CoverageCounts {
  const t = emptyCounts();
  for (const r of rows) {
    for (const k of ['asIs', 'converted', 'noText', 'unchecked', 'pending'] as const) t[k] += r[k];
    for (const k of ['policy', 'tooBig', 'unsupported'] as const) t.skipped[k] += r.skipped[k];
    for (const k of ['conversion', 'refused'] as const) t.failed[k] += r.failed[k];
  }
  return t;
}
