/**
 * `dssync auth login` (built binary, answers on stdin) against the emulator's account with
 * a one-time code: the refresh token is stored 0600 beside the state, and `grantType:
 * refresh_token` then works from it; a wrong code is exit 3, nothing stored.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '@dssync/emulator';
import { TOKEN_PATH } from '@dssync/emulator';
import { BIN, requireBuiltBinary, runCli } from '../cli/run-cli.js';

let emu: RunningEmulator;
const dir = mkdtempSync(join(tmpdir(), 'dssync-login-'));
beforeAll(async () => {
  requireBuiltBinary();
  emu = await startEmulator();
});
afterAll(() => emu.close());

function login(config: string, answers: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, 'auth', 'login', '--config', config], { env: { PATH: process.env.PATH ?? '/usr/bin', HOME: dir }, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.stdin.end(answers);
    child.on('close', (code) => resolve({ code, out }));
  });
}

it('stores a refresh token 0600 beside the state; refresh_token grant works from it; a wrong code is exit 3', { timeout: 60_000 }, async () => {
  const statePath = join(dir, 'state', 'state.json');
  const config = join(dir, 'config.json');
  const write = (grantType: string): void =>
    writeFileSync(config, JSON.stringify({ baseUrl: emu.url, organizationId: 'dev-org', statePath, auth: { type: 'oauth2', tokenUrl: `${emu.url}${TOKEN_PATH}`, grantType, clientId: 'dssync', username: 'otp-user' } }));
  write('refresh_token');
  const bad = await login(config, 'otp-user\ndev-password\n000000\n');
  expect(bad.code).toBe(3);
  expect(bad.out).not.toContain('dev-password');
  const stored = join(dir, 'state', 'dssync-refresh-token');
  expect(existsSync(stored)).toBe(false);
  const ok = await login(config, 'otp-user\ndev-password\n123456\n');
  expect(ok.code, ok.out).toBe(0);
  expect((statSync(stored).mode & 0o777).toString(8)).toBe('600');
  const status = await runCli(['auth', 'status', '--config', config, '--json'], {});
  expect(status.code, status.stderr).toBe(0);
  expect(JSON.parse(status.stdout)).toMatchObject({ provider: 'oauth2', works: true });
});
