/**
 * Conversion in a worker thread (src/convert/isolated.ts, the built worker: npm run build):
 * hostile files and converters that break, hang or exhaust memory become an outcome with
 * their reason, and the main thread and the other files go on.
 */
import { readFileSync } from 'node:fs';
import { zipSync, strToU8 } from 'fflate';
import { describe, expect, it } from 'vitest';
import { convertIsolated } from '../../../src/convert/isolated.js';
import { DEFAULT_LIMITS } from '../../../src/convert/limits.js';

const fixture = (f: string): Buffer => readFileSync(new URL(`../../fixtures/office/${f}`, import.meta.url));
const helper = (f: string): URL => new URL(`../../helpers/${f}`, import.meta.url);

describe('convertIsolated', () => {
  it('converts a real file in its worker', async () => {
    const r = await convertIsolated('pptx', fixture('sales/deck.pptx'), DEFAULT_LIMITS);
    expect(r).toMatchObject({ ok: true });
    expect(r.ok && r.markdown).toContain('kwslidetwox');
  });

  it('a zip bomb xlsx is refused by its directory, before it is inflated', async () => {
    const bomb = zipSync({
      '[Content_Types].xml': strToU8('<Types/>'),
      'xl/workbook.xml': strToU8('<workbook><sheets><sheet name="S" r:id="rId1"/></sheets></workbook>'),
      'xl/worksheets/sheet1.xml': new Uint8Array(64 * 1024 * 1024),
    });
    expect(bomb.length).toBeLessThan(1024 * 1024);
    const r = await convertIsolated('xlsx', bomb, { ...DEFAULT_LIMITS, decompressedBytes: 16 * 1024 * 1024 });
    expect(r).toEqual({ ok: false, reason: expect.stringMatching(/expands to \d+ bytes \(limit decompressedBytes, 16777216\): a zip bomb\?/) });
  });

  it('a truncated pptx is named as not readable', async () => {
    const whole = fixture('sales/deck.pptx');
    const r = await convertIsolated('pptx', whole.subarray(0, Math.floor(whole.length / 2)), DEFAULT_LIMITS);
    expect(r).toEqual({ ok: false, reason: expect.stringMatching(/not a readable zip container|missing: not a complete file/) });
  });

  it('a converter that hangs is stopped at timeMs, and the next file is converted', async () => {
    const started = Date.now();
    const hung = convertIsolated('csv', Buffer.from('a'), { ...DEFAULT_LIMITS, timeMs: 500 }, helper('hang-worker.mjs'));
    const other = await convertIsolated('csv', Buffer.from('a,b\n1,2'), DEFAULT_LIMITS);
    expect(other).toMatchObject({ ok: true, markdown: expect.stringContaining('| 1 | 2 |') });
    expect(await hung).toEqual({ ok: false, reason: 'conversion took longer than 500 ms (limit timeMs): stopped' });
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('a converter that exhausts its heap is stopped at memoryMb', { timeout: 60_000 }, async () => {
    const r = await convertIsolated('csv', Buffer.from('a'), { ...DEFAULT_LIMITS, memoryMb: 64, timeMs: 50_000 }, helper('hog-worker.mjs'));
    expect(r).toEqual({ ok: false, reason: 'conversion needed more than 64 MB of memory (limit memoryMb): stopped' });
  });
});
