import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { call } from './client.js';
import { OIDC_DEFAULTS, TOKEN_PATH } from '@dssync/emulator';
import { waitFor } from '../../helpers/wait-for.js';

const MAIN = fileURLToPath(new URL('../../../dist/src/cli/main.js', import.meta.url));

interface Running {
  child: ChildProcessByStdio<null, Readable, Readable>;
  /** Resolves with the URL of the "listening on" line. */
  ready: Promise<string>;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Running {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: build first (npx tsc -p tsconfig.build.json)`);
  const child = spawn(process.execPath, [MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let out = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const ready = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /^listening on (http:\/\/\S+)\n/.exec(out);
      if (m) resolve(m[1] as string);
    });
    void exit.then(({ code }) => reject(new Error(`emulator exited with ${code} before listening: ${err}`)));
  });
  return { child, stdout: () => out, stderr: () => err, exit, ready };
}

describe('dssync emulator (the built CLI)', () => {
  it('prints one "listening on" line, serves requests, and exits 0 on SIGTERM after saving --data-dir', { timeout: 30_000 }, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dssync-emu-cli-'));
    try {
      const run = runCli(['emulator', '--port', '0', '--org', 'org-1', '--org', 'org-2', '--data-dir', dir], {
        DSSYNC_EMULATOR_TOKEN: 'cli-token',
      });
      const url = await run.ready;
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const created = await call(url, 'POST', '/datastore/v1/data-sources', {
        token: 'cli-token',
        org: 'org-2',
        json: { name: 'From the CLI', llm_connector_ids: ['c'] },
      });
      expect(created.status).toBe(201);
      expect((await call(url, 'GET', '/datastore/v1/data-sources', { token: 'dev-token', org: 'org-2' })).status).toBe(401);

      run.child.kill('SIGTERM');
      expect(await run.exit).toEqual({ code: 0, signal: null });
      expect(run.stdout()).toBe(`listening on ${url}\n`);
      const saved = JSON.parse(await readFile(join(dir, 'emulator-store.json'), 'utf8'));
      expect(saved.dataSources.map((d: { name: string }) => d.name)).toEqual(['From the CLI']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('--help and the banner (stderr) show the OpenID Connect test accounts, as the emulator has them', { timeout: 30_000 }, async () => {
    const help = runCli(['emulator', '--help']);
    help.ready.catch(() => undefined); // --help never listens
    expect((await help.exit).code).toBe(0);
    const run = runCli(['emulator', '--port', '0']);
    const url = await run.ready;
    await waitFor(() => run.stderr().includes('clients:'), { timeout: 10_000, what: 'the banner' });
    run.child.kill('SIGTERM');
    await run.exit;
    expect(run.stderr()).toContain(`${url}${TOKEN_PATH}`);
    for (const [name, account] of Object.entries(OIDC_DEFAULTS.users)) {
      for (const text of [help.stdout(), run.stderr()]) expect(text).toMatch(new RegExp(`${name}\\b[^\\n]*${account.password}`));
      if (account.otp) expect(help.stdout()).toContain(account.otp);
    }
    for (const [client, secret] of Object.entries(OIDC_DEFAULTS.clients)) {
      for (const text of [help.stdout(), run.stderr()]) expect(text).toMatch(new RegExp(`${client}\\b[^\\n]*${secret ?? 'public'}`));
    }
    expect(help.stdout()).toContain(TOKEN_PATH.replace(/^\//, 'URL/'));
  });

  it('exits 2 naming the option when a number is not a number', { timeout: 30_000 }, async () => {
    const run = runCli(['emulator', '--port', 'abc']);
    run.ready.catch(() => {});
    expect((await run.exit).code).toBe(2);
    expect(run.stderr()).toContain('--port');
    expect(run.stderr()).toContain('"abc"');
    expect(run.stdout()).toBe('');
  });
});
