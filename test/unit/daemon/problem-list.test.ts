import { describe, expect, it } from 'vitest';
import { ProblemList } from '../../../src/daemon/mapping/problem-list.js';
import { HISTORY_PASSES, PassHistory, recordOfReport } from '../../../src/daemon/mapping/pass-history.js';
import { TOO_LARGE_REASON } from '../../../src/local/side.js';
import { registerSecret } from '../../../src/secrets.js';
import { FakeClock } from '../../helpers/fake-clock.js';

const T0 = Date.parse('2026-03-01T10:00:00Z');
const never = (): boolean => false;
const UNREADABLE = "EACCES: permission denied, open 'secret.pdf'";
const BIG = `${TOO_LARGE_REASON} (30000000 > 20971520 bytes); raise maxFileBytes to mirror it`;

function report(skipped: { path: string; reason: string; excluded?: true }[], failures: { path: string; op: 'upload'; code: string; message: string; status?: number }[] = [], blocked = false) {
  return { skipped, failures, blocked: blocked ? ({ ok: false, kind: 'mass-delete', message: 'stopped', deletes: 9 } as never) : undefined };
}

describe('ProblemList', () => {
  it('keeps a problem across incremental passes that did not look at it, with its first sighting', () => {
    const c = new FakeClock(T0);
    const l = new ProblemList(() => c.now());
    l.onPass(report([{ path: 'secret.pdf', reason: UNREADABLE }, { path: 'big.pdf', reason: BIG, excluded: true }]), undefined, never);
    c.tick(60_000);
    // Another file changed: the incremental pass's scope names only it, and reports nothing.
    l.onPass(report([]), { files: ['other.txt'], dirs: [] }, never);
    expect(l.data().problems).toEqual([
      { path: 'secret.pdf', kind: 'unreadable', reason: UNREADABLE, since: new Date(T0).toISOString() },
      { path: 'big.pdf', kind: 'too-large', reason: BIG, since: new Date(T0).toISOString() },
    ]);
    expect(l.problemCount()).toBe(2);
    // A later full pass that still sees it keeps the first sighting.
    c.tick(60_000);
    l.onPass(report([{ path: 'secret.pdf', reason: UNREADABLE }, { path: 'big.pdf', reason: BIG, excluded: true }]), undefined, never);
    expect(l.data().problems.map((p) => p.since)).toEqual([new Date(T0).toISOString(), new Date(T0).toISOString()]);
  });

  it('clears an entry when a pass that looked at the file no longer reports it, or when it is sent', () => {
    const c = new FakeClock(T0);
    const l = new ProblemList(() => c.now());
    l.onPass(report([{ path: 'a/secret.pdf', reason: UNREADABLE }, { path: 'b.pdf', reason: 'bad name' }, { path: 'c.pdf', reason: 'bad name' }]), undefined, never);
    // In scope through its folder: fixed.
    expect(l.onPass(report([]), { files: [], dirs: ['a'] }, never)).toBe(true);
    expect(l.data().problems.map((p) => p.path)).toEqual(['b.pdf', 'c.pdf']);
    // Uploaded by an operation.
    expect(l.mirrored('b.pdf')).toBe(true);
    // A full pass that does not report it: fixed or gone.
    l.onPass(report([]), undefined, never);
    expect(l.data().problems).toEqual([]);
  });

  it('a file the pass set aside as maybe being written stays listed until its follow-up pass', () => {
    const l = new ProblemList(() => T0);
    l.onPass(report([{ path: 'big.pdf', reason: BIG, excluded: true }]), undefined, never);
    l.onPass({ ...report([]), settling: ['big.pdf'] }, { files: ['big.pdf'], dirs: [] }, never);
    expect(l.problemCount()).toBe(1);
    l.onPass(report([]), { files: ['big.pdf'], dirs: [] }, never);
    expect(l.problemCount()).toBe(0);
  });

  it('a pass stopped by a guard clears nothing', () => {
    const l = new ProblemList(() => T0);
    l.onPass(report([{ path: 'x', reason: UNREADABLE }]), undefined, never);
    l.onPass(report([], [], true), undefined, never);
    expect(l.problemCount()).toBe(1);
  });

  it('tells refusals from failures, keeps exclusions apart, and not-ingested until an operation settles it', () => {
    const l = new ProblemList(() => T0);
    const refused = (f: { code: string }): boolean => f.code === 'E_REJECTED';
    l.onPass(
      report(
        [{ path: 'fifo', reason: 'excluded: not a regular file', excluded: true }, { path: 'd.pdf', reason: 'conflict: document x of another installation' }],
        [
          { path: 'a.exe', op: 'upload', code: 'E_REJECTED', message: 'HTTP 415', status: 415 },
          { path: 'b.txt', op: 'upload', code: 'E_SERVER', message: 'HTTP 503' },
        ],
      ),
      undefined,
      refused,
    );
    l.notIngested('n.pdf', 'not ingested: no chunks');
    expect(Object.fromEntries(l.data().problems.map((p) => [p.path, p.kind]))).toEqual({ 'd.pdf': 'conflict', 'a.exe': 'refused', 'b.txt': 'failed', 'n.pdf': 'not-ingested' });
    expect(l.data().excluded.map((e) => e.path)).toEqual(['fifo']);
    expect(l.excludedCount()).toBe(1);
    // A full pass does not judge ingestion; a replace of the file does.
    l.onPass(report([]), undefined, never);
    expect(l.data().problems.map((p) => p.path)).toEqual(['n.pdf']);
    l.mirrored('n.pdf');
    expect(l.problemCount()).toBe(0);
  });

  it('is bounded: past the limit entries are counted, and a full pass counts them again', () => {
    const l = new ProblemList(() => T0, 3);
    const many = Array.from({ length: 5 }, (_, i) => ({ path: `f${i}`, reason: UNREADABLE }));
    l.onPass(report(many), undefined, never);
    expect(l.data().problems).toHaveLength(3);
    expect(l.problemCount()).toBe(5);
    l.onPass(report(many), undefined, never);
    expect(l.problemCount()).toBe(5);
  });

  it('round-trips through its data (the records file)', () => {
    const c = new FakeClock(T0);
    const l = new ProblemList(() => c.now());
    l.onPass(report([{ path: 'x', reason: UNREADABLE }]), undefined, never);
    const again = ProblemList.from(JSON.parse(JSON.stringify(l.data())) as never, () => c.now());
    expect(again.data()).toEqual(l.data());
  });
});

describe('PassHistory', () => {
  it('keeps the last passes with their counts, duration and first errors, scrubbed', () => {
    registerSecret('s3cr3t-token-value');
    const h = new PassHistory([], 3);
    const counts = { uploaded: 2, replaced: 0, renamed: 0, updated: 0, deleted: 1, adopted: 0, forgotten: 0, unchanged: 7, skipped: 1, failed: 1 };
    for (let i = 0; i < 5; i++) {
      h.add(
        recordOfReport(i === 0 ? 'start' : 'incremental', {
          ok: false,
          counts,
          failures: [{ path: 'a.txt', op: 'upload', code: 'E_AUTH', message: 'refused token s3cr3t-token-value' }],
          blocked: undefined,
          startedAt: new Date(T0 + i * 60_000).toISOString(),
          finishedAt: new Date(T0 + i * 60_000 + 1500).toISOString(),
        }),
      );
    }
    const list = h.list();
    expect(list).toHaveLength(3);
    expect(list[0]).toMatchObject({ kind: 'incremental', startedAt: new Date(T0 + 2 * 60_000).toISOString(), durationMs: 1500, uploaded: 2, deleted: 1, skipped: 1, failed: 1, ok: false });
    expect(list[0]!.errors).toHaveLength(1);
    expect(list[0]!.errors[0]).toContain('a.txt: upload: refused token');
    expect(JSON.stringify(list)).not.toContain('s3cr3t-token-value');
    expect(HISTORY_PASSES).toBe(50);
  });
});
