/**
 * Bad-input catalogue, what a hostile writer to the share can plant (H-cases, issue 10):
 * special files where dssync reads, an oversized ignore file. Each case runs a real full
 * pass against the emulator: the pass ends (nothing blocks), the reason names the file, no
 * baseline document is lost, and nothing from outside the folder is sent. The swaps during
 * a pass are in test/integration/security/hostile-share.test.ts (real processes, with the
 * test-only pauses).
 */
import { execFileSync } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PassReport } from '../../src/engine/pass-report.js';
import { createWorld, type World } from './world.js';

let world: World;
beforeAll(async () => {
  world = await createWorld();
});
afterAll(async () => {
  await world?.close();
});

const ignoreFile = (): string => join(world.ws.share, '.dssyncignore');

function reasonOf(report: PassReport, path: string): string | undefined {
  return report.skipped.find((s) => s.path === path)?.reason ?? report.failures.find((f) => f.path === path)?.message;
}

describe('bad-input catalogue: a hostile share', () => {
  it('H01 the ignore file is a FIFO: the pass ends at once, an outage naming it; nothing deleted, nothing sent', { timeout: 20_000 }, async () => {
    execFileSync('mkfifo', [ignoreFile()]);
    await world.ws.write('new/while-pipe.txt', 'must wait for the rules');
    try {
      const r = await world.pass();
      expect(r.ok).toBe(false);
      expect(reasonOf(r, '.dssyncignore')).toMatch(/\.dssyncignore is a FIFO \(named pipe\), not a regular file; it is not read; nothing is mirrored until it can be read/);
      // The outage names the ignore file and what is wrong with it, not the folder (issue 25.10).
      expect(r.blocked?.message).toMatch(/^the ignore file of .* \(ignoreFile "\.dssyncignore"\) cannot be used: .*is a FIFO \(named pipe\)/);
      expect(r.blocked?.message).not.toContain('is the drive mounted');
      expect(r.counts.uploaded + r.counts.deleted).toBe(0);
      await world.expectNothingLost();
    } finally {
      await rm(ignoreFile());
      await rm(join(world.ws.share, 'new'), { recursive: true });
    }
  });

  it('H02 the ignore file is larger than 1 MiB: refused with its size and the fix, an outage', { timeout: 20_000 }, async () => {
    await writeFile(ignoreFile(), '# padding\n'.repeat(110_000));
    try {
      const r = await world.pass();
      expect(r.ok).toBe(false);
      expect(reasonOf(r, '.dssyncignore')).toMatch(/the file .*\.dssyncignore is \d+ bytes, more than the 1048576 bytes accepted; shorten it/);
      expect(r.counts.deleted).toBe(0);
      await world.expectNothingLost();
    } finally {
      await rm(ignoreFile());
    }
  });

  it('H03 the ignore file is a folder: an outage naming it', { timeout: 20_000 }, async () => {
    await mkdir(ignoreFile());
    try {
      const r = await world.pass();
      expect(r.ok).toBe(false);
      expect(reasonOf(r, '.dssyncignore')).toContain('.dssyncignore');
      expect(r.counts.deleted).toBe(0);
      await world.expectNothingLost();
    } finally {
      await rm(ignoreFile(), { recursive: true });
    }
  });

  it('H04 a unix socket named like a document: not opened, not a document', { timeout: 20_000 }, async () => {
    await mkdir(join(world.ws.share, 'sock'), { recursive: true });
    const server: Server = createServer();
    await new Promise<void>((resolve) => server.listen(join(world.ws.share, 'sock', 'talk.txt'), resolve));
    try {
      const r = await world.pass();
      expect(r.failures).toEqual([]);
      expect(world.ws.emu.store.listDocuments(world.dataSourceId).filter((d) => d.metadata?.dssync_path === 'sock/talk.txt')).toHaveLength(0);
      await world.expectNothingLost();
    } finally {
      await new Promise((resolve) => server.close(resolve));
      await rm(join(world.ws.share, 'sock'), { recursive: true, force: true });
    }
  });
});
