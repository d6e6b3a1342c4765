/**
 * The records file and the page's feed beside the state (sidecar-file.ts): a convenience,
 * never the state. What an operator depends on: they come back after a restart; a damaged
 * one is logged and read as nothing (the daemon starts); a failed write is logged and the
 * content kept; a save asked for during a write ends with the newest content on disk.
 */
import { describe, expect, it } from 'vitest';
import { FeedFile } from '../../../src/daemon/feed-file.js';
import { RecordsFile } from '../../../src/daemon/records-file.js';
import type { Logger } from '../../../src/log.js';
import { MemFs } from '../state/fakes.js';

function recordingLogger(): { logger: Logger; warnings: Array<{ obj: Record<string, unknown>; msg: string }> } {
  const warnings: Array<{ obj: Record<string, unknown>; msg: string }> = [];
  const logger = { warn: (obj: Record<string, unknown>, msg: string) => warnings.push({ obj, msg }) } as unknown as Logger;
  return { logger, warnings };
}

const history = (n: number) => ({ activity: [], problems: [], points: [{ t: n, ops: n, failed: 0, requests: n, throttled: 0, retries: 0 }] });

describe('the feed file', () => {
  it('comes back as saved', async () => {
    const fs = new MemFs();
    const { logger } = recordingLogger();
    await new FeedFile('/s/state.json.feed.json', logger, fs).save(history(3));
    expect(await new FeedFile('/s/state.json.feed.json', logger, fs).load()).toEqual(history(3));
  });

  it("keeps each entry's error code across a restart, an older name read as its E_* code (issue 38.2)", async () => {
    const fs = new MemFs();
    const { logger } = recordingLogger();
    const at = '2026-11-29T00:00:00.000Z';
    const entry = (code: string) => ({ at, mapping: 'docs', kind: 'upload' as const, path: 'a.txt', outcome: 'failed' as const, message: 'x', code });
    const problem = (code: string) => ({ at, mapping: 'docs', path: 'a.txt', what: 'upload failed', message: 'x', code, next: 'retried' });
    await new FeedFile('/s/f.json', logger, fs).save({ activity: [entry('E_LOCAL_ACCESS'), entry('EACCES')], problems: [problem('queue-overflow')], points: [] });
    const loaded = await new FeedFile('/s/f.json', logger, fs).load();
    expect(loaded?.activity.map((a) => a.code)).toEqual(['E_LOCAL_ACCESS', 'E_LOCAL_ACCESS']);
    expect(loaded?.problems.map((p) => p.code)).toEqual(['E_WATCH_QUEUE_OVERFLOW']);
  });

  it('a save asked for while one is written ends with the newest history on disk', async () => {
    const fs = new MemFs();
    const { logger } = recordingLogger();
    const feed = new FeedFile('/s/f.json', logger, fs);
    const release = fs.gate('open');
    const first = feed.save(history(1));
    const second = feed.save(history(2));
    const third = feed.save(history(3));
    release();
    await Promise.all([first, second, third]);
    expect(JSON.parse(fs.text('/s/f.json') ?? '{}').points[0].t).toBe(3);
  });

  it('a malformed file is logged with its reason and read as nothing', async () => {
    const fs = new MemFs();
    fs.put('/s/f.json', '{"version":1,"activity":"no"}');
    const { logger, warnings } = recordingLogger();
    expect(await new FeedFile('/s/f.json', logger, fs).load()).toBeUndefined();
    expect(warnings).toEqual([{ obj: { file: '/s/f.json', reason: expect.stringContaining('activity') }, msg: expect.stringContaining('starts with an empty feed') }]);
  });
});

describe('the records file', () => {
  const records = () => new Map([['m', { problems: { problems: [], excluded: [], problemsOver: 0, excludedOver: 0 }, history: [], paused: { since: '2026-11-26T00:00:00.000Z' } }]]);

  it('comes back as saved, the pause included', async () => {
    const fs = new MemFs();
    const { logger } = recordingLogger();
    await new RecordsFile('/s/r.json', logger, fs).save(records);
    expect(await new RecordsFile('/s/r.json', logger, fs).load()).toEqual(records());
  });

  it('a failed write is logged, and the next save writes', async () => {
    const fs = new MemFs();
    const { logger, warnings } = recordingLogger();
    const file = new RecordsFile('/s/r.json', logger, fs);
    fs.fail('open', 'ENOSPC');
    await file.save(records);
    expect(warnings.map((w) => w.msg)).toEqual([expect.stringContaining('kept in memory')]);
    expect(fs.text('/s/r.json')).toBeUndefined();
    await file.save(records);
    expect(await file.load()).toEqual(records());
  });

  it('a file that is not JSON is logged and read as empty records', async () => {
    const fs = new MemFs();
    fs.put('/s/r.json', 'not json');
    const { logger, warnings } = recordingLogger();
    expect(await new RecordsFile('/s/r.json', logger, fs).load()).toEqual(new Map());
    expect(warnings[0]?.obj.reason).toMatch(/^not JSON/);
  });
});
