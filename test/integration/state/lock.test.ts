import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { StateLockedError } from '../../../src/state/errors.js';
import { acquireLock, lockPathOf, parseLockInfo, type Lock } from '../../../src/state/lock.js';
import { StateStore } from '../../../src/state/store.js';
import { runChild, type Child } from './helpers/child.js';
import { transpileState, type TranspiledState } from './helpers/transpile.js';

let js: TranspiledState;
let dir: string;
const children: Child[] = [];
const locks: Lock[] = [];

beforeAll(async () => {
  js = await transpileState();
});
afterAll(async () => {
  await js.cleanup();
});
afterEach(async () => {
  for (const c of children.splice(0)) await c.kill9();
  for (const l of locks.splice(0)) await l.release();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function freshDir(): Promise<string> {
  dir = await mkdtemp(join(tmpdir(), 'dssync-lock-'));
  return dir;
}

/** A child that takes the lock and keeps it until killed. */
async function holder(statePath: string): Promise<Child> {
  const child = await runChild(
    js.dir,
    `holder-${Date.now()}-${children.length}.mjs`,
    `import { acquireLock } from ${JSON.stringify(js.module('state/lock.js'))};
await acquireLock(process.argv[2]);
console.log('locked');
setInterval(() => {}, 60_000);
`,
    [statePath],
  );
  children.push(child);
  await child.waitFor(/^locked$/);
  return child;
}

describe('state lock', () => {
  it('a second process cannot take a lock held by a live one, and is told its pid', { timeout: 20_000 }, async () => {
    const statePath = join(await freshDir(), 'state.json');
    const child = await holder(statePath);
    const err = await acquireLock(statePath).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StateLockedError);
    const e = err as StateLockedError;
    expect(e.pid).toBe(child.pid);
    expect(e.message).toContain(`held by process ${child.pid}`);
    expect(e.file).toBe(lockPathOf(statePath));
    // The store refuses to open the state the same way.
    await expect(StateStore.open(statePath)).rejects.toBeInstanceOf(StateLockedError);
  });

  it('takes over the lock of a process killed with -9', { timeout: 20_000 }, async () => {
    const statePath = join(await freshDir(), 'state.json');
    const child = await holder(statePath);
    await child.kill9();
    const lock = await acquireLock(statePath);
    locks.push(lock);
    const info = parseLockInfo(await readFile(lockPathOf(statePath), 'utf8'));
    expect(info).toMatchObject({ pid: process.pid, hostname: hostname() });
    expect((await stat(lockPathOf(statePath))).mode & 0o777).toBe(0o600);
    // And it holds: another process is now refused, naming this one.
    const err = await acquireLock(statePath).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StateLockedError);
  });

  it('the store takes the lock on open and releases it on close', { timeout: 20_000 }, async () => {
    const statePath = join(await freshDir(), 'state.json');
    const store = await StateStore.open(statePath);
    const text = await readFile(lockPathOf(statePath), 'utf8');
    expect(parseLockInfo(text)?.pid).toBe(process.pid);
    await expect(StateStore.open(statePath)).rejects.toThrow(/already holds it/);
    await store.close();
    await expect(stat(lockPathOf(statePath))).rejects.toMatchObject({ code: 'ENOENT' });
    const again = await StateStore.open(statePath);
    await again.close();
  });

  it('takes over a lock from before the last reboot, or an unreadable one', async () => {
    const statePath = join(await freshDir(), 'state.json');
    const lockPath = lockPathOf(statePath);
    // Process 1 is alive, but the lock names another boot.
    await writeFile(lockPath, JSON.stringify({ pid: 1, hostname: hostname(), startedAt: 'x', bootId: 'another-boot' }));
    let lock = await acquireLock(statePath);
    await lock.release();
    await writeFile(lockPath, '');
    lock = await acquireLock(statePath);
    await lock.release();
    await expect(stat(lockPath)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('a lock whose pid was reused by another process is stale: the holder start time differs', async () => {
    const statePath = join(await freshDir(), 'state.json');
    const lockPath = lockPathOf(statePath);
    // The parent (vitest) is alive and not us; its real start time from /proc/<pid>/stat.
    const stat = await readFile(`/proc/${process.ppid}/stat`, 'utf8');
    const realStart = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
    const bootId = (await readFile('/proc/sys/kernel/random/boot_id', 'utf8')).trim();
    // Same boot, live pid, but the recorded start time is another process's: taken over.
    await writeFile(lockPath, JSON.stringify({ pid: process.ppid, hostname: hostname(), startedAt: 'x', bootId, procStart: String(Number(realStart) + 1) }));
    const lock = await acquireLock(statePath);
    expect(lock.info.pid).toBe(process.pid);
    await lock.release();
    // The same pid with its true start time is the live holder: refused, naming it.
    await writeFile(lockPath, JSON.stringify({ pid: process.ppid, hostname: hostname(), startedAt: 'x', bootId, procStart: realStart }));
    await expect(acquireLock(statePath)).rejects.toThrow(new RegExp(`process ${process.ppid}`));
  });

  it('refuses a lock taken on another host, saying so', async () => {
    const statePath = join(await freshDir(), 'state.json');
    await writeFile(lockPathOf(statePath), JSON.stringify({ pid: 4242, hostname: 'elsewhere', startedAt: 'x' }));
    await expect(acquireLock(statePath)).rejects.toThrow(/process 4242 on elsewhere.*another host/);
  });

  it('release leaves alone a lock that another process has taken over meanwhile', async () => {
    const statePath = join(await freshDir(), 'state.json');
    const lock = await acquireLock(statePath);
    const other = JSON.stringify({ pid: 1, hostname: hostname(), startedAt: 'y' });
    await writeFile(lockPathOf(statePath), other);
    await lock.release();
    expect(await readFile(lockPathOf(statePath), 'utf8')).toBe(other);
  });
});
