/**
 * A real share reaches the App (issue 35, "Done when"): `dssync run`, the built binary, on a
 * folder of real office files (test/fixtures/office: every converted format, a scanned PDF)
 * and an Outlook message, plus hostile ones (a truncated deck, a zip bomb workbook), against the strict emulator.
 * Each document carries its original's words in its chunks under the original's name; the
 * scan is named "no text", each hostile file is named with its reason, and the daemon stays
 * healthy and goes on serving the folder.
 */
import { cp, readFile } from 'node:fs/promises';
import { strToU8, zipSync } from 'fflate';
import { afterEach, beforeAll, expect, it } from 'vitest';
import type { Workspace } from '../../helpers/mirror-check.js';
import { outlookMsg } from '../../helpers/outlook-msg.js';
import { requireBuiltBinary } from '../cli/run-cli.js';
import { daemonWorkspace, startDaemon, waitFor, type DaemonProcess } from './daemon-process.js';

const FIXTURES = new URL('../../fixtures/office/', import.meta.url);
let ws: Workspace | undefined;
let daemon: DaemonProcess | undefined;
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  await daemon?.kill();
  await ws?.close();
  daemon = undefined;
  ws = undefined;
});

/** An .xlsx whose directory says it expands to 300 MB (past decompressedBytes, 256 MB) in a 300 kB file. */
function zipBomb(): Uint8Array {
  const zeros = new Uint8Array(1024 * 1024);
  const entries: Record<string, Uint8Array> = {
    '[Content_Types].xml': strToU8('<Types/>'),
    'xl/workbook.xml': strToU8('<workbook><sheets><sheet name="S" r:id="rId1"/></sheets></workbook>'),
  };
  for (let i = 0; i < 300; i++) entries[`xl/media/pad${i}.bin`] = zeros;
  return zipSync(entries, { level: 9 });
}

it('mirrors every format with its text, names the scan and the hostile files, and stays healthy', { timeout: 180_000 }, async () => {
  ws = await daemonWorkspace({ mapping: { id: 'share' }, config: { ingestionCheck: { enabled: false } } });
  await cp(FIXTURES, ws.share, { recursive: true });
  const manifest = JSON.parse(await readFile(new URL('manifest.json', FIXTURES), 'utf8')) as Record<string, { kind: string; markers: string[] }>;
  const deck = await readFile(new URL('sales/deck.pptx', FIXTURES));
  await ws.write('sales/broken.pptx', deck.subarray(0, deck.length >> 1));
  const bomb = zipBomb();
  expect(bomb.length).toBeLessThan(1024 * 1024);
  await ws.write('finance/bomb.xlsx', Buffer.from(bomb));
  // An Outlook message (no fixture of a real mailbox may be shared: built as Outlook stores one).
  manifest['mail/outlook.msg'] = { kind: 'convert', markers: ['kwmsgsubjectx', 'kwmsgbodyx', 'kwmsgattachx'] };
  await ws.write('mail/outlook.msg', outlookMsg({ subject: 'Quarterly kwmsgsubjectx', body: 'The figures kwmsgbodyx are in.', from: { name: 'Alice', email: 'alice@example.com' }, to: [{ name: 'Bob', email: 'bob@example.com' }], attachments: [{ name: 'budget kwmsgattachx.xlsx', data: Buffer.from('PK') }] }));
  daemon = await startDaemon(ws);
  const d = daemon;

  const problems = async (): Promise<Record<string, string>> => Object.fromEntries(((await d.status()).mappings[0]?.problems ?? []).map((p) => [p.path, `${p.kind}: ${p.reason}`]));
  await waitFor(async () => {
    const p = await problems();
    return p['sales/broken.pptx'] !== undefined && p['finance/bomb.xlsx'] !== undefined && p['policies/scanned-contract.pdf'] !== undefined;
  }, { timeout: 120_000, what: 'the first pass and its problems' });
  const named = await problems();
  expect(named['sales/broken.pptx']).toMatch(/not converted to Markdown: .*(not a readable zip container|not a complete file)/);
  expect(named['finance/bomb.xlsx']).toMatch(/not converted to Markdown: .*expands to \d+ bytes \(limit decompressedBytes, \d+\): a zip bomb\?/);
  expect(named['policies/scanned-contract.pdf']).toBe('no-text: no text: the App cannot read it (scanned?)');

  // Every file of the share under its own name, its words in the chunks the App reads.
  await waitFor(() => Object.keys(manifest).filter((f) => !f.endsWith('.xls')).every((f) => ws!.emu.store.listDocuments(ws!.dataSourceId()).some((doc) => doc.name === f)), { timeout: 60_000, what: 'every document' });
  const byName = new Map(ws.emu.store.listDocuments(ws.dataSourceId()).map((doc) => [doc.name, doc]));
  for (const [file, { kind, markers }] of Object.entries(manifest)) {
    if (file.endsWith('.xls')) continue;
    const text = ws.emu.store.listChunks(byName.get(file)!.document_id).map((c) => c.text).join('\n');
    for (const m of markers) expect(text, `${file} (${kind}) carries ${m}`).toContain(m);
  }
  expect(byName.has('sales/broken.pptx')).toBe(false);
  expect(byName.has('finance/bomb.xlsx')).toBe(false);

  // Healthy, and still serving: a file saved now reaches the App.
  expect((await d.healthz()).httpStatus).toBe(200);
  await ws.write('later/minutes.md', '# Minutes kwlaterx\n');
  await waitFor(() => ws!.emu.store.listDocuments(ws!.dataSourceId()).some((doc) => doc.name === 'later/minutes.md'), { timeout: 60_000, what: 'a file saved after the hostile ones' });
  expect(d.child.exitCode).toBeNull();
});
