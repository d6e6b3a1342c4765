/**
 * IngestionChecker: constant-time queue in upload order, and bulk trouble told in one
 * summarised line per interval (a 75,000-file burst once wrote 90,000 identical warnings,
 * past journald's rate limit). Fake clock, fake API, captured log lines.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { FALLBACK_PER_SECOND, IN_PROGRESS_RECHECKS, IngestionChecker, MAX_TRACKED, SUMMARY_INTERVAL_MS } from '../../../src/daemon/mapping/ingestion.js';
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
  const checker = new IngestionChecker({ api, dataSourceId: () => 'ds1', delayMs: 5_000, clock, logger: createLogger({ level: 'debug', destination: sink }), pageSize: 1000 });
  const warnings = () => lines.filter((l) => l.level === 40);
  /** A document the service lists, with its ingestion state when the records carry one. */
  const doc = (id: string, state: { status?: string; failure_reason?: string } = {}) => api.add({ id, name: id, metadata: {}, dataSourceId: 'ds1', ...state });
  return { checker, clock, api, warnings, doc };
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
    const { checker, clock, warnings, doc } = setup();
    for (let i = 0; i < 50; i++) {
      doc(`d${i}`);
      checker.track(`doc${i}.pdf`, `d${i}`);
    }
    // The records say nothing here: one chunk listing per document, at the bounded rate.
    await clock.advance(5_000 + (50 * 1000) / FALLBACK_PER_SECOND);
    expect(checker.notIngested()).toHaveLength(50);
    await clock.advance(SUMMARY_INTERVAL_MS);
    const told = warnings();
    expect(told.length).toBeLessThanOrEqual(2);
    expect(told.reduce((n, l) => n + Number(l.count ?? 0), 0)).toBe(50);
    expect(String(told[0]!.msg)).toMatch(/^1 document\(s\) not ingested \(doc0\.pdf\)/);
    expect(String(told[1]!.msg)).toMatch(/^49 document\(s\) not ingested \(doc1\.pdf, doc2\.pdf, doc3\.pdf and 46 more\); dssync status lists them/);
  });

  it('a document with chunks is ingested; one without is listed until its file is uploaded again and ingested', async () => {
    const { checker, clock, api, doc } = setup();
    for (const id of ['d1', 'd2', 'd3']) doc(id);
    api.chunks.set('d1', [{ id: 'c1', raw: {} }]);
    checker.track('a.txt', 'd1');
    checker.track('b.txt', 'd2');
    await clock.advance(5_000 + (2 * 1000) / FALLBACK_PER_SECOND);
    expect(api.calls.filter((c) => c.op === 'listChunks').map((c) => c.arg)).toEqual(['d1', 'd2']);
    expect(checker.notIngested().map((n) => n.path)).toEqual(['b.txt']);
    checker.track('b.txt', 'd3');
    api.chunks.set('d3', [{ id: 'c3', raw: {} }]);
    await clock.advance(5_000);
    expect(checker.notIngested()).toEqual([]);
  });

  it('a check the service fails is not a verdict: the document is not listed as not ingested', async () => {
    const { checker, clock, api, warnings, doc } = setup();
    doc('d1');
    api.failBefore = (op) => (op === 'listChunks' ? apiError('E_SERVER', 503, { retryable: true }) : undefined);
    checker.track('a.txt', 'd1');
    await clock.advance(5_000 + SUMMARY_INTERVAL_MS);
    expect(api.count('listChunks')).toBe(1);
    expect(checker.notIngested()).toEqual([]);
    expect(warnings()).toEqual([]);
  });

  it('a file uploaded again is checked once, after its new upload; a forgotten one not at all', async () => {
    const { checker, clock, api, doc } = setup();
    for (const id of ['d1', 'd2', 'd3']) doc(id);
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

  it('where the records carry the state, one listing answers for every document: no chunk listing, and the service\'s reason', async () => {
    const { checker, clock, api, doc } = setup();
    for (let i = 0; i < 40; i++) doc(`ok${i}`, { status: 'ready' });
    doc('bad', { status: 'failed', failure_reason: 'text extraction failed: Invalid PDF structure.' });
    for (let i = 0; i < 40; i++) checker.track(`ok${i}.txt`, `ok${i}`);
    checker.track('bad.pdf', 'bad');
    await clock.advance(5_000);
    expect(api.count('listDocuments')).toBe(1);
    expect(api.count('listChunks') + api.count('getDocument')).toBe(0);
    expect(checker.notIngested()).toEqual([expect.objectContaining({ path: 'bad.pdf', reason: 'failed: text extraction failed: Invalid PDF structure.' })]);
    expect(checker.pending).toBe(0);
  });

  it('a listing longer than the documents it answers for gives way to one GET per due document', async () => {
    const { checker, clock, api, doc } = setup();
    for (let i = 0; i < 2_500; i++) doc(`old${i}`, { status: 'ready' });
    checker.track('first.txt', 'old0');
    await clock.advance(5_000); // the size is not known yet: one listing (3 pages of 1000)
    expect(api.count('listDocuments')).toBe(1);
    doc('new', { status: 'failed', failure_reason: 'empty file' });
    checker.track('new.txt', 'new');
    await clock.advance(5_000);
    expect(api.count('listDocuments')).toBe(1);
    expect(api.count('getDocument')).toBe(1);
    expect(checker.notIngested().map((n) => n.reason)).toEqual(['failed: empty file']);
  });

  it('a document still in progress is asked again a delay later, and reported when it never finishes', async () => {
    const { checker, clock, api, doc } = setup();
    const d = doc('p', { status: 'processing' });
    checker.track('p.txt', 'p');
    await clock.advance(5_000);
    expect(checker.pending).toBe(1);
    d.status = 'ready';
    await clock.advance(5_000);
    expect(checker.pending).toBe(0);
    expect(checker.notIngested()).toEqual([]);
    doc('q', { status: 'processing' });
    checker.track('q.txt', 'q');
    await clock.advance(5_000 * (IN_PROGRESS_RECHECKS + 1));
    expect(checker.notIngested()).toEqual([expect.objectContaining({ path: 'q.txt', reason: `still processing after ${IN_PROGRESS_RECHECKS + 1} checks` })]);
    expect(api.count('listChunks')).toBe(0);
  });
});
