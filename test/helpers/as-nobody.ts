/**
 * Runs the built binary as the user nobody (setpriv, util-linux): what a service account
 * without access meets. nobody must reach what it runs: a checkout under a private folder (a
 * clone in /root, a 0700 home, a `mktemp -d` folder) is out of its reach, and the binary then
 * fails before it says anything (issue 27.9). So when nobody cannot read the built binary,
 * the binary, package.json and node_modules are copied (hard links where the filesystem
 * allows) into a folder of the temporary directory that nobody can read; when even node or
 * that copy is out of its reach, the caller skips with the reason.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { BIN } from '../integration/cli/run-cli.js';

export const AS_NOBODY = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'] as const;

export type NobodyBinary = { bin: string; dispose(): void } | { skip: string };

/** Whether nobody can run the binary `bin` (with every module it loads at start). */
function nobodyRuns(bin: string): boolean {
  return spawnSync(AS_NOBODY[0], [...AS_NOBODY.slice(1), process.execPath, bin, '--version'], { stdio: 'ignore', cwd: '/' }).status === 0;
}

export function nobodyBinary(): NobodyBinary {
  if (spawnSync(AS_NOBODY[0], [...AS_NOBODY.slice(1), process.execPath, '-e', '0'], { stdio: 'ignore', cwd: '/' }).status !== 0) {
    return { skip: `nobody cannot run node (${process.execPath}) through setpriv: install node where every user can run it` };
  }
  if (nobodyRuns(BIN)) return { bin: BIN, dispose: () => undefined };
  // BIN is <checkout>/dist/src/cli/main.js.
  const checkout = dirname(dirname(dirname(dirname(BIN))));
  const dir = mkdtempSync(join(tmpdir(), 'dssync-as-nobody-'));
  chmodSync(dir, 0o755);
  cpSync(join(checkout, 'dist', 'src'), join(dir, 'dist', 'src'), { recursive: true });
  cpSync(join(checkout, 'package.json'), join(dir, 'package.json'));
  // Hard links are instant on one filesystem; a copy otherwise.
  if (spawnSync('cp', ['-al', join(checkout, 'node_modules'), join(dir, 'node_modules')], { stdio: 'ignore' }).status !== 0) {
    rmSync(join(dir, 'node_modules'), { recursive: true, force: true });
    cpSync(join(checkout, 'node_modules'), join(dir, 'node_modules'), { recursive: true, verbatimSymlinks: true });
  }
  // The folders are the copy's own (the files may be hard links: their modes are left alone).
  spawnSync('find', [dir, '-type', 'd', '-exec', 'chmod', 'a+rx', '{}', '+'], { stdio: 'ignore' });
  const bin = join(dir, 'dist', 'src', 'cli', 'main.js');
  const dispose = (): void => rmSync(dir, { recursive: true, force: true });
  if (!nobodyRuns(bin)) {
    dispose();
    return { skip: `nobody cannot run a copy of the binary in ${tmpdir()} either (a private temporary directory, or files of node_modules only their owner may read)` };
  }
  return { bin, dispose };
}
