/**
 * Issue 24.9: `dssync probe --save DIR` (built binary, real files) in a folder another local
 * user could have prepared: a link planted there is replaced, not written through; a file
 * planted with mode 0666 is replaced by a 0600 one; a folder of another user, or one that
 * others may write, is refused before anything is asked of the service.
 */
import { chmodSync, chownSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '@dssync/emulator';
import { requireBuiltBinary, runCli } from '../cli/run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'dssync-probe-save-'));
let emu: RunningEmulator;
beforeAll(async () => {
  requireBuiltBinary();
  emu = await startEmulator({});
});
afterAll(() => emu?.close());
const env = (): Record<string, string> => ({ DSSYNC_BASE_URL: emu.url, DSSYNC_ORG: 'dev-org', DSSYNC_TOKEN: 'dev-token' });

describe('probe --save in a folder others could have prepared', () => {
  it('a planted link is replaced, not followed; a planted 0666 report becomes 0600', { timeout: 60_000 }, async () => {
    const save = join(dir, 'own');
    mkdirSync(save, { mode: 0o700 });
    chmodSync(save, 0o700);
    const victim = join(dir, 'victim-secret');
    writeFileSync(victim, 'root only\n', { mode: 0o600 });
    symlinkSync(victim, join(save, '01-list-data-sources.json'));
    writeFileSync(join(save, 'report.json'), '{}', { mode: 0o666 });
    chmodSync(join(save, 'report.json'), 0o666);

    const r = await runCli(['probe', '--save', save, '--json'], env());
    expect(r.code, r.stderr).toBe(0);
    expect(readFileSync(victim, 'utf8')).toBe('root only\n');
    const written = lstatSync(join(save, '01-list-data-sources.json'));
    expect(written.isFile()).toBe(true);
    expect(written.mode & 0o777).toBe(0o600);
    expect(lstatSync(join(save, 'report.json')).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(save, 'report.json'), 'utf8')).toContain('list-data-sources');
  });

  it('a folder of another user is refused, naming it, before any request', { timeout: 60_000 }, async () => {
    const save = join(dir, 'theirs');
    mkdirSync(save, { mode: 0o755 });
    chownSync(save, 65534, 65534);
    const before = emu.stats().requests;
    const r = await runCli(['probe', '--save', save], env());
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`--save ${save}: the folder belongs to uid 65534, not to you`);
    expect(emu.stats().requests).toBe(before);
  });

  it('a folder writable by every user is refused', { timeout: 60_000 }, async () => {
    const save = join(dir, 'open');
    mkdirSync(save);
    chmodSync(save, 0o1777);
    const r = await runCli(['probe', '--save', save], env());
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/the folder is writable by every user \(mode 1777\).*chmod go-w/);
  });

  it('a new folder is created 0700', { timeout: 60_000 }, async () => {
    const save = join(dir, 'fresh', 'out');
    const r = await runCli(['probe', '--save', save], env());
    expect(r.code, r.stderr).toBe(0);
    expect(lstatSync(save).mode & 0o777).toBe(0o700);
  });
});
