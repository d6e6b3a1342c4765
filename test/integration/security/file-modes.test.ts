/**
 * Security: the files dssync creates are its owner's alone, whatever the umask: the state
 * file (it names every file of the share), its lock, a corrupt state moved aside, the state
 * folder, and the config file the demo writes (it holds the service's address); an
 * existing state file readable by others is restricted; and a token file readable by every
 * user draws a warning, from the library, the CLI and the daemon alike.
 */
import { spawn } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load.js';
import { startEmulator } from '@dssync/emulator';
import { createLogger } from '../../../src/log.js';
import { StateStore } from '../../../src/state/store.js';
import { BIN, requireBuiltBinary, runCli } from '../cli/run-cli.js';
import { corruptStateText, stateFileText } from '../../helpers/state-fixture.js';

let dir: string;
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const modeOf = async (p: string): Promise<string> => ((await stat(p)).mode & 0o777).toString(8);

function capture(): { logger: ReturnType<typeof createLogger>; lines: () => string } {
  let text = '';
  const sink = new Writable({
    write(chunk: Buffer, _e, cb) {
      text += chunk.toString();
      cb();
    },
  });
  return { logger: createLogger({ destination: sink, level: 'debug' }), lines: () => text };
}

describe('security: file modes', () => {
  it('state file, lock and state folder are created owner-only even with umask 000', async () => {
    dir = await mkdtemp(join(tmpdir(), 'dssync-sec-modes-'));
    const statePath = join(dir, 'var', 'lib', 'dssync', 'state.json');
    const old = process.umask(0);
    try {
      const store = await StateStore.open(statePath);
      store.ensureMapping('m', 'ds', '/srv/share');
      store.setFile('m', 'a.txt', { documentId: 'd1', size: 1, mtimeMs: 1, sha256: 'h', syncedAt: '2026-01-01T00:00:00.000Z' });
      await store.flush();
      // A durable write lands in the journal; the snapshot is written when the journal folds.
      expect(await modeOf(`${statePath}.journal`)).toBe('600');
      await store.fold();
      expect(await modeOf(statePath)).toBe('600');
      expect(await modeOf(`${statePath}.lock`)).toBe('600');
      expect(await modeOf(join(dir, 'var', 'lib', 'dssync'))).toBe('700');
      await store.close();
    } finally {
      process.umask(old);
    }
  });

  it('an existing state file readable by others is restricted to 600, with a warning', async () => {
    dir = await mkdtemp(join(tmpdir(), 'dssync-sec-modes-'));
    const statePath = join(dir, 'state.json');
    await writeFile(statePath, stateFileText());
    await chmod(statePath, 0o644);
    const { logger, lines } = capture();
    const store = await StateStore.open(statePath, { logger });
    await store.close();
    expect(await modeOf(statePath)).toBe('600');
    expect(lines()).toMatch(/was readable by others \(mode 644\): restricted to 600/);
  });

  it('a corrupt state file moved aside stays owner-only', async () => {
    dir = await mkdtemp(join(tmpdir(), 'dssync-sec-modes-'));
    const statePath = join(dir, 'state.json');
    await writeFile(statePath, corruptStateText(), { mode: 0o644 });
    const store = await StateStore.open(statePath, { onCorrupt: 'reset' });
    await store.close();
    const aside = (await readdir(dir)).filter((n) => n.startsWith('state.json.corrupt-'));
    expect(aside).toHaveLength(1);
    expect(await modeOf(join(dir, aside[0]!))).toBe('600');
  });

  it('a token file readable by every user draws a warning (library and CLI)', async () => {
    dir = await mkdtemp(join(tmpdir(), 'dssync-sec-modes-'));
    const tokenFile = join(dir, 'token');
    await writeFile(tokenFile, 'sec-token-world-readable\n');
    await chmod(tokenFile, 0o644);
    const warnings: string[] = [];
    loadConfig({ env: { DSSYNC_BASE_URL: 'http://127.0.0.1:9', DSSYNC_ORG: 'o', DSSYNC_TOKEN_FILE: tokenFile }, warn: (m) => warnings.push(m) });
    expect(warnings).toEqual([`the token file ${tokenFile} is readable by every user; restrict it with: chmod 600 ${tokenFile}`]);
    // The CLI says it on stderr, and goes on.
    const emu = await startEmulator({ token: 'sec-token-world-readable', orgs: ['o'] });
    try {
      const r = await runCli(['datasources', 'list', '--json'], { DSSYNC_BASE_URL: emu.url, DSSYNC_ORG: 'o', DSSYNC_TOKEN_FILE: tokenFile });
      expect(r.code).toBe(0);
      expect(r.stderr).toContain(`dssync: warning: the token file ${tokenFile} is readable by every user`);
      expect(r.stderr + r.stdout).not.toContain('sec-token-world-readable');
    } finally {
      await emu.close();
    }
    // An owner-only file draws none.
    await chmod(tokenFile, 0o600);
    warnings.length = 0;
    loadConfig({ env: { DSSYNC_BASE_URL: 'http://127.0.0.1:9', DSSYNC_ORG: 'o', DSSYNC_TOKEN_FILE: tokenFile }, warn: (m) => warnings.push(m) });
    expect(warnings).toEqual([]);
  });

  it('the config and state files the demo creates are owner-only', { timeout: 60_000 }, async () => {
    dir = await mkdtemp(join(tmpdir(), 'dssync-sec-demo-'));
    const folder = join(dir, 'folder');
    const tmp = join(dir, 'tmp');
    await mkdir(tmp);
    await mkdir(folder);
    await writeFile(join(folder, 'hello.txt'), 'hello');
    const child = spawn(process.execPath, [BIN, 'demo', folder], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir, TMPDIR: tmp },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      let out = '';
      await new Promise<void>((resolve, reject) => {
        child.stdout!.setEncoding('utf8').on('data', (d: string) => {
          out += d;
          if (out.includes('dssync is mirroring')) resolve();
        });
        void exited.then((code) => reject(new Error(`demo exited (${code}) before mirroring: ${out}`)));
      });
      const work = (await readdir(tmp)).filter((n) => n.startsWith('dssync-demo-'));
      expect(work).toHaveLength(1);
      expect(await modeOf(join(tmp, work[0]!, 'config.json'))).toBe('600');
      // The state is the snapshot and its journal: whichever exists is owner-only.
      const stateFiles = (await readdir(join(tmp, work[0]!))).filter((n) => n.startsWith('state.json'));
      expect(stateFiles.length).toBeGreaterThan(0);
      // A file written atomically may be renamed between the listing and its stat (its
      // temporary name gone): whatever is still there is checked.
      for (const f of stateFiles) {
        const mode = await modeOf(join(tmp, work[0]!, f)).catch((e: NodeJS.ErrnoException) => (e.code === 'ENOENT' ? undefined : Promise.reject(e)));
        if (mode !== undefined) expect(mode, f).toBe('600');
      }
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
  });
});
