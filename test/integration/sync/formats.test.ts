/**
 * Office files reach the service as Markdown (issue 35, docs/formats.md): `dssync sync`, the
 * built binary, on a folder of real office files (test/fixtures/office) against the emulator.
 * Each converted document keeps its original's name and carries the original's marker words in
 * its chunks; the formats the service reads go as they are; a file its converter cannot read
 * is named with its reason and holds back none of the others.
 */
import { cp, readFile, writeFile } from 'node:fs/promises';
import { afterEach, beforeAll, expect, it } from 'vitest';
import { createWorkspace, type Workspace } from '../../helpers/mirror-check.js';
import { jsonOf, requireBuiltBinary } from '../cli/run-cli.js';

interface SyncJson {
  ok: boolean;
  mappings: { counts: Record<string, number>; failures: { path: string; message: string }[] }[];
}

const FIXTURES = new URL('../../fixtures/office/', import.meta.url);
let ws: Workspace | undefined;
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  await ws?.close();
  ws = undefined;
});

it('converts what the service cannot read, keeps the names, and names a broken file', { timeout: 90_000 }, async () => {
  ws = await createWorkspace();
  await cp(FIXTURES, ws.share, { recursive: true });
  const manifest = JSON.parse(await readFile(new URL('manifest.json', FIXTURES), 'utf8')) as Record<string, { kind: string; markers: string[] }>;
  const deck = await readFile(new URL('sales/deck.pptx', FIXTURES));
  await ws.write('sales/broken.pptx', deck.subarray(0, deck.length >> 1));

  const r = await ws.sync('--json');
  const report = jsonOf<SyncJson>(r);
  const failures = report.mappings[0]?.failures ?? [];
  expect(failures.map((f) => f.path)).toEqual(['sales/broken.pptx']);
  expect(failures[0]?.message).toMatch(/not converted to Markdown: .*(not a readable zip container|not a complete file)/);

  const docs = ws.emu.store.listDocuments(ws.dataSourceId());
  const byName = new Map(docs.map((d) => [d.name, d]));
  for (const [file, { kind, markers }] of Object.entries(manifest)) {
    if (file.endsWith('.xls')) {
      expect(byName.has(file), `${file} is not mirrored (no converter)`).toBe(false);
      continue;
    }
    const doc = byName.get(file);
    expect(doc, `${file} is a document under its own name`).toBeDefined();
    const text = ws.emu.store.listChunks(doc!.document_id).map((c) => c.text).join('\n');
    for (const m of markers) expect(text, `${file} (${kind}) carries ${m}`).toContain(m);
  }
  // Sheets arrive as Markdown tables, not as the zip's bytes.
  const budget = byName.get('finance/budget.xlsx')!;
  expect(ws.emu.store.listChunks(budget.document_id).map((c) => c.text).join('\n')).toContain('| travel kwsheetonex | 1200 |');

  // A second pass sends nothing again: the converted files are unchanged.
  const uploadsBefore = ws.emu.stats().uploads;
  const again = jsonOf<SyncJson>(await ws.sync('--json'));
  expect(again.mappings[0]?.counts.uploaded ?? 0).toBe(0);
  expect(ws.emu.stats().uploads - uploadsBefore).toBeLessThanOrEqual(1); // the broken file alone may be tried again
});

it('lands a .csv, an .rtf and an .odt on the strict emulator, converted; the same .csv sent as-is is refused 415, named', { timeout: 90_000 }, async () => {
  ws = await createWorkspace({ emulator: { permissiveFormats: false } });
  await ws.write('sales/q3.csv', 'region,total\nnorth kwcsvx,1200\n');
  await ws.write('letters/welcome.rtf', '{\\rtf1\\ansi{\\fonttbl{\\f0 Times;}}\\f0 Welcome kwrtfx\\par}');
  await ws.write('hr/handbook.odt', await readFile(new URL('hr/handbook.odt', FIXTURES)));

  const report = jsonOf<SyncJson>(await ws.sync('--json'));
  expect(report.mappings[0]?.failures).toEqual([]);
  const docs = new Map(ws.emu.store.listDocuments(ws.dataSourceId()).map((d) => [d.name, d]));
  for (const [name, marker] of [['sales/q3.csv', 'kwcsvx'], ['letters/welcome.rtf', 'kwrtfx'], ['hr/handbook.odt', 'kwodtbodyx']] as const) {
    const doc = docs.get(name);
    expect(doc, name).toMatchObject({ status: 'ready', content_type: 'text/markdown' });
    expect(ws.emu.store.listChunks(doc!.document_id).map((c) => c.text).join('\n'), name).toContain(marker);
  }
  await ws.close();

  ws = await createWorkspace({ emulator: { permissiveFormats: false }, mapping: { formats: { '.csv': 'as-is' } } });
  await ws.write('sales/q3.csv', 'region,total\nnorth,1200\n');
  const refused = jsonOf<SyncJson>(await ws.sync('--json'));
  expect(refused.mappings[0]?.failures.map((f) => f.path)).toEqual(['sales/q3.csv']);
  expect(refused.mappings[0]?.failures[0]?.message).toMatch(/415.*has type \.csv, which the service does not read/);
});

it('a change of the formats re-sends the files it converts differently, once; the others are not sent again', { timeout: 90_000 }, async () => {
  // An emulator that reads .csv as it is (the permissive set), so that the first sync can send it so.
  ws = await createWorkspace({ emulator: { permissiveFormats: true }, mapping: { formats: { '.csv': 'as-is' } } });
  await ws.write('sales/q3.csv', 'region,total\nnorth kwcsvy,1200\n');
  await ws.write('notes/read-me.txt', 'plain kwtxty\n');
  await ws.write('finance/budget.xlsx', await readFile(new URL('finance/budget.xlsx', FIXTURES)));
  const first = jsonOf<SyncJson>(await ws.sync('--json'));
  expect(first.mappings[0]?.counts).toMatchObject({ uploaded: 3, failed: 0 });
  const typeOf = (name: string) => ws!.emu.store.listDocuments(ws!.dataSourceId()).find((d) => d.name === name)?.content_type;
  expect(typeOf('sales/q3.csv')).not.toBe('text/markdown');

  // The mapping now converts .csv (the default): that file alone is sent again, converted.
  const config = JSON.parse(await readFile(ws.configPath, 'utf8')) as { mappings: { formats?: unknown }[] };
  delete config.mappings[0]!.formats;
  await writeFile(ws.configPath, JSON.stringify(config));
  const second = jsonOf<SyncJson>(await ws.sync('--json'));
  expect(second.mappings[0]?.counts).toMatchObject({ uploaded: 0, replaced: 1, updated: 0, failed: 0, unchanged: 2 });
  const csv = ws.emu.store.listDocuments(ws.dataSourceId()).find((d) => d.name === 'sales/q3.csv')!;
  expect(csv.content_type).toBe('text/markdown');
  expect(ws.emu.store.listChunks(csv.document_id).map((c) => c.text).join('\n')).toContain('| north kwcsvy | 1200 |');

  const third = jsonOf<SyncJson>(await ws.sync('--json'));
  expect(third.mappings[0]?.counts).toMatchObject({ uploaded: 0, replaced: 0, updated: 0, failed: 0, unchanged: 3 });
});
