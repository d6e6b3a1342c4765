/**
 * Bad-input catalogue, the operator's view (U-cases, issue 14 and 10.5/10.8): the built
 * `dssync` binary run as an operator would, where things go wrong. Each case asserts the
 * exit code and the words that matter — the setting's name and the fix — and that nothing
 * of the mirrored baseline is lost. docs/reliability.md ("Operator messages (issue 14)") holds the table.
 */
import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StateStore } from '../../src/state/store.js';
import { BIN, requireBuiltBinary, runCli, type CliResult } from '../integration/cli/run-cli.js';
import { createWorld, removeQuietly, TOKEN, variantConfig, type World } from './world.js';

let world: World;
beforeAll(async () => {
  requireBuiltBinary();
  world = await createWorld();
});
afterAll(async () => {
  await world?.close();
});

function dssync(...args: string[]): Promise<CliResult> {
  return runCli(args, { DSSYNC_TOKEN: TOKEN, DSSYNC_LOG_LEVEL: 'warn' });
}
function sync(...args: string[]): Promise<CliResult> {
  return dssync('sync', '--config', world.ws.configPath, ...args);
}
function service(...args: string[]): Promise<CliResult> {
  return runCli(args, { DSSYNC_TOKEN: TOKEN, DSSYNC_BASE_URL: world.ws.emu.url, DSSYNC_ORG: 'org-test' });
}
function docsNamed(path: string) {
  return world.ws.emu.store.listDocuments(world.dataSourceId).filter((d) => d.metadata?.dssync_path === path);
}

describe('bad-input catalogue: what the operator is told', () => {
  it('U02 a file over maxFileBytes: excluded and named with the setting, sync and status exit 0 (as the README promises)', { timeout: 120_000 }, async () => {
    const cfg = await variantConfig(world, 'small-max', (c) => {
      (c.mappings as Record<string, unknown>[])[0]!.maxFileBytes = 1000;
    });
    await world.ws.write('big/huge.txt', 'x'.repeat(5000));
    try {
      const r = await dssync('sync', '--config', cfg);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toMatch(/skipped big\/huge\.txt: excluded: larger than maxFileBytes \(5000 > 1000 bytes\); raise maxFileBytes to mirror it/);
      expect(r.stdout).toMatch(/^In sync\.$/m);
      const s = await dssync('status', '--config', cfg);
      expect(s.code, s.stdout).toBe(0);
      expect(s.stdout).not.toMatch(/Needs attention/);
      expect(docsNamed('big/huge.txt')).toEqual([]);
    } finally {
      await removeQuietly(join(world.ws.share, 'big'));
      await sync();
    }
    await world.expectNothingLost();
  });

  it('U03 a document the service fails to ingest: sync, documents upload and documents list show its status and reason', { timeout: 120_000 }, async () => {
    await world.ws.write('empty/blank.txt', '');
    try {
      const r = await sync();
      expect(r.code, r.stdout + r.stderr).toBe(1);
      expect(r.stdout).toMatch(/not ingested {2}empty\/blank\.txt: the service says "failed": no text found in the file/);
      expect(r.stdout).not.toMatch(/^In sync\.$/m);
      const list = await service('documents', 'list', world.dataSourceId);
      expect(list.code).toBe(0);
      expect(list.stdout.split('\n')[0]).toMatch(/STATUS$/);
      expect(list.stdout).toMatch(/empty\/blank\.txt .* failed: no text found in the file/);
      const up = await service('documents', 'upload', world.dataSourceId, join(world.ws.share, 'empty/blank.txt'));
      expect(up.code).toBe(1);
      expect(up.stderr).toMatch(/the service could not ingest 1 of the uploaded document \(see STATUS\): blank\.txt: no text found in the file/);
      const extra = world.ws.emu.store.listDocuments(world.dataSourceId).find((d) => d.name === 'blank.txt');
      if (extra) await service('documents', 'delete', world.dataSourceId, extra.document_id);
    } finally {
      await removeQuietly(join(world.ws.share, 'empty'));
      await sync();
    }
    await world.expectNothingLost();
  });

  it('U11 a link leading outside the folder and a FIFO: each named once in sync, the pass still in sync', { timeout: 120_000 }, async () => {
    await mkdir(join(world.ws.share, 'odd'), { recursive: true });
    await writeFile(join(world.ws.dir, 'outside.txt'), 'secret next door');
    await symlink(join(world.ws.dir, 'outside.txt'), join(world.ws.share, 'odd/link.txt'));
    execFileSync('mkfifo', [join(world.ws.share, 'odd/pipe.txt')]);
    try {
      const cfg = await variantConfig(world, 'follow', (c) => {
        (c.mappings as Record<string, unknown>[])[0]!.followSymlinks = true;
      });
      const r = await dssync('sync', '--config', cfg);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.stdout.match(/odd\/link\.txt/g)).toHaveLength(1);
      expect(r.stdout).toMatch(/skipped odd\/link\.txt: excluded: a symbolic link leading outside the mapped folder/);
      expect(r.stdout).toMatch(/skipped odd\/pipe\.txt: excluded: not a regular file \(a FIFO, socket or device is never read\)/);
      expect(docsNamed('odd/link.txt')).toEqual([]);
    } finally {
      await removeQuietly(join(world.ws.share, 'odd'));
    }
    await world.expectNothingLost();
  });

  it('U12 a dry run lists every change, writes nothing, works while a daemon holds the state, and ends truthfully', { timeout: 120_000 }, async () => {
    await world.ws.write('dry/one.txt', 'one');
    await world.ws.write('dry/two.txt', 'two');
    // A daemon's lock on the state file: the dry run reads beside it.
    const held = await StateStore.open(world.ws.statePath);
    // The state on disk is a snapshot and its journal: neither may change.
    const stateTimes = () =>
      Promise.all([world.ws.statePath, `${world.ws.statePath}.journal`].map((f) => stat(f).then((s) => s.mtimeMs, () => undefined)));
    const before = await stateTimes();
    expect(before.some((t) => t !== undefined)).toBe(true);
    const sourcesBefore = world.ws.emu.store.listDataSources('org-test').length;
    try {
      const r = await sync('--dry-run');
      expect(r.code, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^ {2}would upload {3}dry\/one\.txt$/m);
      expect(r.stdout).toMatch(/^ {2}would upload {3}dry\/two\.txt$/m);
      expect(r.stdout).toMatch(/^Dry run: 2 changes planned; nothing was written\.$/m);
      expect(r.stdout).not.toMatch(/In sync\./);
      expect(await stateTimes()).toEqual(before);
    } finally {
      await held.close();
    }
    expect(docsNamed('dry/one.txt')).toEqual([]);
    expect(world.ws.emu.store.listDataSources('org-test')).toHaveLength(sourcesBefore);
    await removeQuietly(join(world.ws.share, 'dry'));
    await world.expectNothingLost();
  });

  it('U12c a dry run exits 1 when a sync would not complete (a file that cannot be mirrored), as the README says, and names the file', { timeout: 120_000 }, async () => {
    // A name that is not valid UTF-8 is a file a sync cannot mirror, readable even by root.
    await mkdir(join(world.ws.share, 'dry-bad'), { recursive: true });
    await writeFile(Buffer.concat([Buffer.from(join(world.ws.share, 'dry-bad', 'latin1-')), Buffer.from([0xe9]), Buffer.from('.txt')]), 'x');
    try {
      const r = await sync('--dry-run');
      expect(r.code, r.stdout + r.stderr).toBe(1);
      expect(r.stdout).toMatch(/^ {2}skipped dry-bad\/latin1-.*not valid UTF-8/m);
      expect(r.stdout).toMatch(/^Dry run: .*a sync would not complete: see above\. Nothing was written\.$/m);
    } finally {
      await removeQuietly(join(world.ws.share, 'dry-bad'));
    }
  });

  it('U12b a dry run for a data source that does not exist yet: every file planned, nothing created', { timeout: 120_000 }, async () => {
    const cfg = await variantConfig(world, 'new-ds', (c) => {
      (c.mappings as Record<string, unknown>[])[0]!.dataSource = { name: 'Not yet', llmConnectorIds: ['conn-1'] };
      c.statePath = join(world.ws.dir, 'state-new', 'state.json');
    });
    const r = await dssync('sync', '--config', cfg, '--dry-run');
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/-> \(new data source "Not yet"\): dry run, 8 change\(s\) planned/);
    expect(r.stdout).toMatch(/would upload {3}keep\/doc-0\.txt/);
    expect(r.stdout).toMatch(/^Dry run: 8 changes planned; nothing was written\.$/m);
    expect(world.ws.emu.store.listDataSources('org-test').map((d) => d.name)).not.toContain('Not yet');
    await expect(stat(join(world.ws.dir, 'state-new'))).rejects.toThrow();
  });

  it('U-10.5 names with terminal escapes and newlines are escaped in the human output, exact in --json', { timeout: 120_000 }, async () => {
    const evil = 'evil\x1b[2Jname\nwould delete   everything.txt';
    await world.ws.write(`esc/${evil}`, 'x');
    try {
      const r = await sync('--dry-run');
      expect(r.stdout).not.toContain('\x1b');
      expect(r.stdout).toContain('would upload   esc/evil\\x1b[2Jname\\nwould delete   everything.txt');
      expect(r.stdout).not.toMatch(/^would delete/m);
      const j = await sync('--dry-run', '--json');
      const plan = (JSON.parse(j.stdout) as { mappings: { plan: { path: string }[] }[] }).mappings[0]!.plan;
      expect(plan.map((p) => p.path)).toContain(`esc/${evil}`);
    } finally {
      await removeQuietly(join(world.ws.share, 'esc'));
    }
  });

  it('U15 argument errors in dssync words: a suggestion for --dryrun, completion zsh, --log-level on sync', { timeout: 120_000 }, async () => {
    const r = await sync('--dryrun');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^dssync: Unknown argument: --dryrun; did you mean --dry-run\?$/m);
    const z = await dssync('completion', 'zsh');
    expect(z.code, z.stderr).toBe(0);
    expect(z.stdout).toMatch(/compdef/);
    const f = await dssync('completion', 'fish');
    expect(f.code).toBe(2);
    expect(f.stderr).toMatch(/completion scripts exist for bash and zsh, not "fish"/);
    const l = await sync('--dry-run', '--log-level', 'error');
    expect(l.code, l.stderr).toBe(0);
    const help = await dssync('emulator', '--help');
    expect(help.stdout).not.toMatch(/--base-url|--token-file/);
    expect(help.stdout).toMatch(/--port +Port \(0: a free port\) \[default: 0\] \(a number\)/);
    expect(help.stdout).not.toMatch(/--port[^\n]*\[string\]/);
  });

  it('U16 datasources delete of a data source holding documents asks first: --yes for scripts, nothing deleted without it', { timeout: 120_000 }, async () => {
    const r = await service('datasources', 'delete', world.dataSourceId);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(new RegExp(`data source ${world.dataSourceId} \\("Share"\\) holds \\d+ documents; add --yes to delete it and them \\(nothing was deleted\\)`));
    expect(world.ws.emu.store.listDataSources('org-test').map((d) => d.data_source_id)).toContain(world.dataSourceId);
    await world.expectNothingLost();
  });

  it('U-10.8 under ulimit -n 64 even --help ends with the limit named and the fix, not a stack trace', { timeout: 120_000 }, async () => {
    const r = await new Promise<CliResult>((resolve, reject) => {
      const child = spawn('/bin/sh', ['-c', `ulimit -n 64 && exec "${process.execPath}" "${BIN}" --help`], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    // Either it loaded (then it is the help), or it says which limit and what to set.
    if (r.code === 0) {
      expect(r.stdout).toMatch(/dssync <command>/);
    } else {
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^dssync: cannot start: the open-file limit \(ulimit -n\) is 64: dssync needs at least 256 to start, and the daemon 65536 \(the systemd units set LimitNOFILE=65536\)/m);
      expect(r.stderr).not.toMatch(/^\s+at /m);
    }
  });

  it('the early SIGHUP: a reload asked for while `run` is still loading does not kill the daemon', async () => {
    const cfg = await variantConfig(world, 'daemon', (c) => {
      c.status = { listen: false };
    });
    const child = spawn(process.execPath, [BIN, 'run', '--config', cfg], { env: { PATH: process.env.PATH ?? '', DSSYNC_TOKEN: TOKEN, DSSYNC_LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    // Deterministic: the moment the entry file has caught SIGHUP (the kernel's mask says so),
    // long before the daemon's modules are loaded.
    const hupCaught = (): boolean => {
      try {
        const mask = /SigCgt:\s*([0-9a-f]+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? '0';
        return (BigInt(`0x${mask}`) & 1n) === 1n;
      } catch {
        return false;
      }
    };
    while (!hupCaught() && child.exitCode === null) await new Promise((r) => setImmediate(r));
    child.kill('SIGHUP');
    while (!/dssync running/.test(out) && child.exitCode === null) await new Promise((r) => setTimeout(r, 20));
    expect(child.exitCode, out).toBeNull();
    child.kill('SIGTERM');
    expect(await exited, out).toBe(0);
    expect(out).toMatch(/reloading the configuration/);
  }, 120_000);
});
