/**
 * The README's first command: `dssync demo` mirrors a folder into the in-process emulator
 * and prints each file as it lands.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, requireBuiltBinary } from '../cli/run-cli.js';

describe('dssync demo', () => {
  it('fills an empty folder with samples, mirrors it, prints each change, stops on SIGINT', { timeout: 60_000 }, async () => {
    requireBuiltBinary();
    const dir = await mkdtemp(join(tmpdir(), 'dssync-demo-test-'));
    const folder = join(dir, 'share');
    const child = spawn(process.execPath, [BIN, 'demo', folder], { env: { PATH: process.env.PATH ?? '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const waitFor = async (re: RegExp): Promise<void> => {
      for (let i = 0; i < 300 && !re.test(out); i++) await new Promise((r) => setTimeout(r, 100));
      expect(out).toMatch(re);
    };
    try {
      await waitFor(/dssync is mirroring/);
      expect(await readdir(folder)).toEqual(expect.arrayContaining(['handbook.md', 'handbook.pdf', 'notes.txt']));
      expect(out).toMatch(/uploaded +handbook\.pdf/);
      expect(out).toMatch(/npx dssync documents list ds_/);
      await writeFile(join(folder, 'dropped.txt'), 'a file dropped during the demo\n');
      await waitFor(/uploaded +dropped\.txt/);
      child.kill('SIGINT');
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    }
  });
});
