/**
 * Issue 24.10: the token command's timeout ends the helper's whole process group. A helper
 * that starts a child of its own (`sleep` here, a browser login in life) used to keep the
 * CLI waiting until that child ended, and left it running afterwards.
 */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { requireBuiltBinary, runCli } from '../cli/run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'dssync-cmd-group-'));

/** Live (not zombie) processes whose command line contains `marker`. */
function survivors(marker: string): string[] {
  const out: string[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
      const state = /^State:\s+(\S)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
      if (cmdline.includes(marker) && state !== 'Z') out.push(`${pid} ${cmdline}`);
    } catch {
      // Ended while we looked.
    }
  }
  return out;
}

describe('the token command in its own process group', () => {
  beforeAll(() => requireBuiltBinary());

  it('a timeout ends the helper and its children: the CLI exits with the timeout error, no child survives', { timeout: 60_000 }, async () => {
    // A number no other process uses, so the check finds only this test's children.
    const marker = `3600.${process.pid}${Date.now() % 100_000}`;
    const config = join(dir, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({ baseUrl: 'http://127.0.0.1:9', organizationId: 'org', auth: { type: 'command', command: ['sh', '-c', `sleep ${marker} & sleep ${marker}`], timeoutSeconds: 1 } }),
      { mode: 0o600 },
    );
    // Without the fix the CLI waits for the children (an hour): ended here so the test fails, not hangs.
    let leftAfterGuard: string[] = [];
    const guard = setTimeout(() => {
      leftAfterGuard = survivors(marker);
      for (const line of leftAfterGuard) process.kill(Number(line.split(' ')[0]), 'SIGKILL');
    }, 30_000);
    try {
      const r = await runCli(['datasources', 'list', '--config', config]);
      expect(r.stderr).toMatch(/token command sh did not finish within 1 s/);
      expect(r.code).not.toBe(0);
      expect(leftAfterGuard, 'the CLI waited for the helper\'s children').toEqual([]);
      expect(survivors(marker)).toEqual([]);
    } finally {
      clearTimeout(guard);
      for (const line of survivors(marker)) process.kill(Number(line.split(' ')[0]), 'SIGKILL');
    }
  });

  it('the helper does not inherit the secrets of the environment (issue 36.5)', { timeout: 30_000 }, async () => {
    const seen = join(dir, 'helper-env.txt');
    const config = join(dir, 'env-config.json');
    writeFileSync(config, JSON.stringify({ baseUrl: 'http://127.0.0.1:9', organizationId: 'org', auth: { type: 'command', command: ['sh', '-c', `env > ${seen}; echo helper-token-0123456789`] } }), { mode: 0o600 });
    await runCli(['datasources', 'list', '--config', config], { DSSYNC_TOKEN: 'env-token-secret-1', DSSYNC_PASSWORD: 'env-password-secret-2', DSSYNC_CLIENT_SECRET: 'env-client-secret-3', DSSYNC_MARK: 'kept' });
    const env = readFileSync(seen, 'utf8');
    expect(env).toContain('DSSYNC_MARK=kept');
    for (const v of ['env-token-secret-1', 'env-password-secret-2', 'env-client-secret-3']) expect(env).not.toContain(v);
  });
});
