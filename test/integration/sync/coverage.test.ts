/**
 * Coverage you can see (issue 35.6, docs/status.md "Coverage"): the built binary on a mixed
 * folder (the office fixtures, a scanned and a damaged PDF, a broken pptx, a format the
 * mapping skips) against the emulator. `sync --dry-run` shows what each extension's files
 * will become before anything is sent; after `sync`, `status --coverage` (no daemon) counts
 * what was sent as it is, converted, without text, skipped and why, and failed.
 */
import { cp, readFile } from 'node:fs/promises';
import { afterEach, beforeAll, expect, it } from 'vitest';
import type { CoverageRow } from '../../../src/engine/coverage.js';
import { createWorkspace, type Workspace } from '../../helpers/mirror-check.js';
import { jsonOf, requireBuiltBinary } from '../cli/run-cli.js';

const FIXTURES = new URL('../../fixtures/office/', import.meta.url);
let ws: Workspace | undefined;
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  await ws?.close();
  ws = undefined;
});

/** A row as `asIs/converted/noText/unchecked policy/tooBig/unsupported conversion/refused pending`. */
const brief = (r: CoverageRow): string =>
  `${r.asIs}/${r.converted}/${r.noText}/${r.unchecked} ${r.skipped.policy}/${r.skipped.tooBig}/${r.skipped.unsupported} ${r.failed.conversion}/${r.failed.refused} ${r.pending}`;
const table = (rows: CoverageRow[]): Record<string, string> => Object.fromEntries(rows.map((r) => [r.extension, brief(r)]));

it('counts per extension what was sent, converted, has no text, was skipped and why, or failed', { timeout: 120_000 }, async () => {
  ws = await createWorkspace({ mapping: { formats: { '.eml': 'skip' }, maxFileBytes: 100_000 } });
  await cp(FIXTURES, ws.share, { recursive: true });
  const deck = await readFile(new URL('sales/deck.pptx', FIXTURES));
  await ws.write('sales/broken.pptx', deck.subarray(0, deck.length >> 1));
  await ws.write('policies/truncated.pdf', await readFile(new URL('../truncated.pdf', FIXTURES)));
  await ws.write('policies/huge.txt', Buffer.alloc(200_000, 'a'));

  const dry = jsonOf<{ mappings: { coverage: { rows: CoverageRow[] } }[] }>(await ws.sync('--dry-run', '--json'));
  expect(ws.emu.stats().uploads).toBe(0);
  const planned = table(dry.mappings[0]!.coverage.rows);
  // Before anything is sent: the broken pptx is still to be converted, the PDFs already checked.
  expect(planned['.pptx']).toBe('0/2/0/0 0/0/0 0/0 0');
  expect(planned['.pdf']).toBe('3/0/1/1 0/0/0 0/0 0');

  await ws.sync('--json');
  const r = await ws.cli(['status', '--config', ws.configPath, '--coverage', '--json']);
  expect(r.code, r.stderr).toBe(1); // a conversion failed, a PDF has no text
  const rows = table(jsonOf<{ coverage: { rows: CoverageRow[] }[] }>(r).coverage[0]!.rows);
  expect(rows).toEqual({
    '.csv': '0/1/0/0 0/0/0 0/0 0',
    '.doc': '0/1/0/0 0/0/0 0/0 0',
    '.docx': '1/0/0/0 0/0/0 0/0 0',
    '.eml': '0/0/0/0 1/0/0 0/0 0', // the mapping skips .eml
    '.epub': '0/1/0/0 0/0/0 0/0 0',
    '.json': '0/0/0/0 0/0/1 0/0 0', // manifest.json: not a format dssync sends
    '.md': '2/0/0/0 0/0/0 0/0 0',
    '.odp': '0/1/0/0 0/0/0 0/0 0',
    '.ods': '0/1/0/0 0/0/0 0/0 0',
    '.odt': '0/1/0/0 0/0/0 0/0 0',
    '.pdf': '3/0/1/1 0/0/0 0/0 0', // memo, the scan (no text), the damaged one (unchecked)
    '.pptx': '0/1/0/0 0/0/0 1/0 0', // the broken deck failed its conversion
    '.rtf': '0/1/0/0 0/0/0 0/0 0',
    '.tsv': '0/1/0/0 0/0/0 0/0 0',
    '.txt': '0/0/0/0 0/1/0 0/0 0', // over maxFileBytes
    '.xls': '0/0/0/0 0/0/1 0/0 0', // no converter
    '.xlsx': '0/1/0/0 0/0/0 0/0 0',
  });

  const text = await ws.cli(['status', '--config', ws.configPath, '--coverage']);
  expect(text.stdout).toMatch(/^Coverage of name:Share \(.*\):$/m);
  expect(text.stdout).toMatch(/^ {2}\.pdf +3 +0 +1 +1 +0 +0 +0 +0 +0 +0$/m);
  expect(text.stdout).toMatch(/^ {2}total +6 +10 +1 +1 +1 +1 +2 +1 +0 +0$/m);
});
