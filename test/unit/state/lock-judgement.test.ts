/**
 * The lock's judgement table (issue 23, defect 3): the boot id first; the host name only
 * between boots. A fake /proc (LockProbe) stands for the machine.
 */
import { describe, expect, it } from 'vitest';
import { mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { acquireLock, judgeLock, LOCK_LEASE_MS, type LockInfo, type LockProbe } from '../../../src/state/lock.js';
import { StateLockedError } from '../../../src/state/errors.js';

function probe(o: Partial<LockProbe> & { running?: Record<number, string> } = {}): LockProbe {
  const running = o.running ?? {};
  return {
    hostname: o.hostname ?? 'pod-new',
    bootId: 'bootId' in o ? o.bootId : 'boot-1',
    pid: o.pid ?? 4242,
    alive: (pid) => pid in running,
    procStart: (pid) => running[pid],
  };
}
const holder = (o: Partial<LockInfo> = {}): LockInfo => ({ pid: 7, hostname: 'pod-old', startedAt: '2026-01-01T00:00:00.000Z', bootId: 'boot-1', procStart: '1000', ...o });

describe('judgeLock', () => {
  const rows: [string, LockInfo | undefined, LockProbe, boolean, RegExp][] = [
    ['same boot, host renamed (container recreated), holder dead: stale', holder(), probe(), false, /no longer running/],
    ['same boot, host renamed, the dead holder\'s pid reused by another process: stale', holder(), probe({ running: { 7: '5555' } }), false, /now belongs to another process/],
    ['same boot, host renamed, our own pid (a recreated container gets pid 7 again): stale', holder(), probe({ pid: 7 }), false, /this process's own/],
    ['same boot, host renamed, the holder still runs: alive', holder(), probe({ running: { 7: '1000' } }), true, /still running/],
    ['same boot, same host, holder still runs: alive', holder({ hostname: 'pod-new' }), probe({ running: { 7: '1000' } }), true, /still running/],
    ['another boot, same host: stale (taken before the last reboot)', holder({ hostname: 'pod-new', bootId: 'boot-0' }), probe({ running: { 7: '1000' } }), false, /before the last reboot/],
    ['another boot and another host (a shared volume on another node): refused, naming the fix', holder({ bootId: 'boot-9' }), probe(), true, /another host \(pod-old, boot boot-9\), another machine.*delete .*own statePath/],
    ['no boot id here, another host: refused', holder({ bootId: undefined }), probe({ bootId: undefined }), true, /another machine/],
    ['no boot id here, same host, holder dead: stale', holder({ hostname: 'pod-new', bootId: undefined }), probe({ bootId: undefined }), false, /no longer running/],
    ['unreadable lock: stale', undefined, probe(), false, /unreadable/],
  ];
  for (const [name, info, p, alive, reason] of rows) {
    it(name, () => {
      const v = judgeLock(info, p);
      expect(v.alive).toBe(alive);
      expect(v.reason).toMatch(reason);
    });
  }
});

describe('the lock heartbeat (a pod recreated on another node with the same volume)', () => {
  it('another boot and host: refused while refreshed within the lease, stale once it was not', () => {
    const other = holder({ bootId: 'boot-9' });
    const fresh = judgeLock(other, probe(), 'L', 40_000);
    expect(fresh.alive).toBe(true);
    expect(fresh.reason).toMatch(/refreshed it 40 s ago; it is taken over once it has not been refreshed for 5 min/);
    const old = judgeLock(other, probe(), 'L', LOCK_LEASE_MS + 60_000);
    expect(old).toEqual({ alive: false, reason: expect.stringMatching(/another host \(pod-old\) and not refreshed for 6 min/) });
    // A lock dated in the future (the other machine's clock ahead) is never abandoned.
    expect(judgeLock(other, probe(), 'L', -LOCK_LEASE_MS * 10).alive).toBe(true);
  });

  it('acquireLock takes over a lock file of another machine not refreshed for the lease, and refuses a fresh one', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dssync-lock-lease-'));
    try {
      const statePath = join(dir, 'state.json');
      const foreign = { pid: 1, hostname: 'another-node-7f9c', startedAt: '2026-01-01T00:00:00.000Z', bootId: 'a-boot-of-another-machine', procStart: '12' };
      await writeFile(`${statePath}.lock`, `${JSON.stringify(foreign)}\n`);
      await expect(acquireLock(statePath)).rejects.toBeInstanceOf(StateLockedError);
      const past = new Date(Date.now() - LOCK_LEASE_MS - 60_000);
      await utimes(`${statePath}.lock`, past, past);
      const lock = await acquireLock(statePath);
      expect(lock.info.pid).toBe(process.pid);
      await lock.release();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
