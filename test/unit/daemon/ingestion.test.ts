/**
 * IngestionChecker: constant-time queue in upload order, and bulk trouble told in one
 * summarised line per interval (a 75,000-file burst once wrote 90,000 identical warnings,
 * past journald's rate limit). Fake clock, fake API, captured log lines.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { IngestionChecker, MAX_TRACKED, SUMMARY_INTERVAL_MS } from '../../../src/daemon/ingestion.js';
import { createLogger } from '../../../src/log.js';
import { apiError, FakeApi } from '../../helpers/fake-api.js';
import { FakeClock } from '../../helpers/fake-clock.js';

function setup() {
  const lines: { level: number; msg: string; [k: string]: unknown }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _e, cb) {
      for (const l of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(l) as (typeof lines)[number]);
      cb();
    },
  });
  const clock = new FakeClock();
  const api = new FakeApi();
  const checker = new IngestionChecker({ api, dataSourceId: () => 'ds1', delayMs: 5_000, clock, logger: createLogger({ level: 'debug', destination: sink }) });
  const warnings = () => lines.filter((l) => l.level === 40);
  return { checker, clock, api, warnings };
}

describe('IngestionChecker', () => {
  it('a burst beyond the bound keeps the newest, and says so in one line per interval, not one per upload', async () => {
    const { checker, clock, warnings } = setup();
    for (let i = 0; i < MAX_TRACKED + 5_000; i++) checker.track(`f${i}.txt`, `doc${i}`);
    expect(checker.pending).toBe(MAX_TRACKED);
    // The first drop is told at once; the rest are counted for the next line.
    expect(warnings()).toHaveLength(1);
    for (let i = 0; i < 3_000; i++) checker.track(`g${i}.txt`, `docg${i}`);
    expect(warnings()).toHaveLength(1);
    checker.stop();
    expect(warnings()).toHaveLength(2);
    expect(warnings()[1]!.dropped).toBe(5_000 - 1 + 3_000);
    expect(String(warnings()[1]!.msg)).toMatch(/not checked for ingestion: more than 10000 were waiting/);
    expect(clock.now()).toBe(0);
  });

  it('documents without chunks are listed in the status and told in one summary line', async () => {
    const { checker, clock, warnings } = setup();
    for (let i = 0; i < 50; i++) checker.track(`doc${i}.pdf`, `d${i}`);
    await clock.advance(5_000);
    expect(checker.notIngested()).toHaveLength(50);
    await clock.advance(SUMMARY_INTERVAL_MS);
    const told = warnings();
    expect(told.length).toBeLessThanOrEqual(2);
    expect(told.reduce((n, l) => n + Number(l.count ?? 0), 0)).toBe(50);
    expect(String(told[0]!.msg)).toMatch(/^1 document\(s\) not ingested: no chunks after the ingestion delay \(doc0\.pdf\)/);
    expect(String(told[1]!.msg)).toMatch(/^49 document\(s\) not ingested: .*\(doc1\.pdf, doc2\.pdf, doc3\.pdf and 46 more\); dssync status lists them/);
  });

  it('a document with chunks is ingested; one without is listed until its file is uploaded again and ingested', async () => {
    const { checker, clock, api } = setup();
    api.chunks.set('d1', [{ id: 'c1', raw: {} }]);
    checker.track('a.txt', 'd1');
    checker.track('b.txt', 'd2');
    await clock.advance(5_000);
    expect(api.calls.filter((c) => c.op === 'listChunks').map((c) => c.arg)).toEqual(['d1', 'd2']);
    expect(checker.notIngested().map((n) => n.path)).toEqual(['b.txt']);
    checker.track('b.txt', 'd3');
    api.chunks.set('d3', [{ id: 'c3', raw: {} }]);
    await clock.advance(5_000);
    expect(checker.notIngested()).toEqual([]);
  });

  it('a check the service fails is not a verdict: the document is not listed as not ingested', async () => {
    const { checker, clock, api, warnings } = setup();
    api.failBefore = (op) => (op === 'listChunks' ? apiError('E_SERVER', 503, { retryable: true }) : undefined);
    checker.track('a.txt', 'd1');
    await clock.advance(5_000 + SUMMARY_INTERVAL_MS);
    expect(api.count('listChunks')).toBe(1);
    expect(checker.notIngested()).toEqual([]);
    expect(warnings()).toEqual([]);
  });

  it('a file uploaded again is checked once, after its new upload; a forgotten one not at all', async () => {
    const { checker, clock, api } = setup();
    checker.track('a.txt', 'd1');
    await clock.advance(3_000);
    checker.track('a.txt', 'd2');
    checker.track('b.txt', 'd3');
    checker.forget('b.txt');
    await clock.advance(2_500);
    expect(api.count('listChunks')).toBe(0);
    await clock.advance(3_000);
    expect(api.count('listChunks')).toBe(1);
    expect(checker.notIngested().map((n) => n.documentId)).toEqual(['d2']);
  });
});
