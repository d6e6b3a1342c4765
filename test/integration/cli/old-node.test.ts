/**
 * dssync started by a Node.js older than it needs (package.json engines): one line naming both
 * versions and exit 2, not a load error. Run with the system's own node when it is such an
 * older one (Debian's 20 on the development machine and CI's); skipped, saying so, elsewhere.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { tooOldNode } from '../../../src/cli/runtime-check.js';
import { BIN, requireBuiltBinary } from './run-cli.js';

function olderNode(): { path: string; version: string } | undefined {
  for (const path of ['/usr/bin/node', '/usr/local/bin/node']) {
    if (!existsSync(path)) continue;
    const version = spawnSync(path, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout.trim();
    if (version !== '' && tooOldNode(version) !== undefined) return { path, version };
  }
  return undefined;
}

const old = olderNode();
if (old === undefined) console.warn('old-node.test.ts: no Node.js older than 22.13 on this machine: skipped');

describe.runIf(old !== undefined)('dssync on a Node.js older than it needs', () => {
  it.each([['sync', '--config', '/nonexistent.json'], ['--version']])('`dssync %s` says which Node.js it needs and exits 2', (...args) => {
    requireBuiltBinary();
    const r = spawnSync(old!.path, [BIN, ...args], { encoding: 'utf8', env: { PATH: '/usr/bin:/bin', HOME: '/nonexistent' } });
    expect(r.stderr).toBe(`dssync: Node.js ${old!.version} is too old: dssync needs 22.13 or newer (26, the active LTS, recommended; docs/upgrading.md)\n`);
    expect(r.status).toBe(2);
  });
});
