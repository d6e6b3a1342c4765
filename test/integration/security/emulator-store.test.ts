/**
 * Security: the emulator's `--data-dir` store holds every uploaded document, so it is
 * private: a real `dssync emulator` process started with umask 000 creates the folder 0700
 * and the file 0600, replaces a 0644 file left by an older version with a 0600 one, and a
 * symbolic link planted at the store's name is replaced, never written through.
 */
import { spawn } from 'node:child_process';
import { chmod, lstat, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN } from '../cli/run-cli.js';
import { StopWaiting, waitFor } from '../daemon/daemon-process.js';

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

/** `dssync emulator --data-dir D` under umask 000; creates one data source, then stops. */
async function emulatorWrites(dataDir: string): Promise<void> {
  const child = spawn('/bin/sh', ['-c', 'umask 000; exec "$0" "$@"', process.execPath, BIN, 'emulator', '--port', '0', '--org', 'org-1', '--data-dir', dataDir], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', DSSYNC_EMULATOR_TOKEN: 'tok' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    let err = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    let gone = false;
    void exited.then(() => (gone = true));
    await waitFor(
      () => {
        if (gone) throw new StopWaiting(`the emulator exited: ${err}`);
        return /listening on (http:\S+)/.test(out);
      },
      { timeout: 30_000, what: 'the emulator to listen' },
    );
    const url = /listening on (http:\S+)/.exec(out)![1]!;
    const r = await fetch(`${url}/datastore/v1/data-sources`, {
      method: 'POST',
      headers: { authorization: 'Bearer tok', 'x-service-organization-id': 'org-1', 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Private', llm_connector_ids: ['c'] }),
    });
    expect(r.status).toBeLessThan(300);
  } finally {
    child.kill('SIGTERM');
  }
  expect(await exited).toBe(0);
}

describe('security: the emulator store is private', () => {
  it('a new data dir is 0700 and its store 0600, even under umask 000', { timeout: 60_000 }, async () => {
    dir = await mkdtemp(join(tmpdir(), 'dssync-emu-modes-'));
    const data = join(dir, 'data');
    await emulatorWrites(data);
    expect((await stat(data)).mode & 0o777).toBe(0o700);
    expect((await stat(join(data, 'emulator-store.json'))).mode & 0o777).toBe(0o600);
  });

  it('an old 0644 store becomes 0600; a link at the store name is replaced, its target untouched', { timeout: 60_000 }, async () => {
    dir = await mkdtemp(join(tmpdir(), 'dssync-emu-modes-'));
    const data = join(dir, 'data');
    await emulatorWrites(data);
    const store = join(data, 'emulator-store.json');
    await chmod(store, 0o644); // as an older version left it
    await emulatorWrites(data);
    expect((await stat(store)).mode & 0o777).toBe(0o600);

    const victim = join(dir, 'victim.txt');
    await writeFile(victim, 'not the emulator\'s', { mode: 0o644 });
    const saved = await readFile(store, 'utf8');
    await rm(store);
    await symlink(victim, store);
    // Reading through the link is harmless (the folder is the operator's, 0700); writing
    // through it would overwrite the target.
    await writeFile(victim, saved);
    await emulatorWrites(data);
    expect((await lstat(store)).isSymbolicLink()).toBe(false);
    expect((await stat(store)).mode & 0o777).toBe(0o600);
    expect(await readFile(victim, 'utf8')).toBe(saved);
  });
});
