/**
 * Issue 24.8, with the built binary: `config check` refuses plain http:// to another host
 * for the service and for the token endpoint (exit 2, naming the field, why, and the
 * setting that allows it), and accepts it once the operator says so. The hosts are under
 * .invalid: nothing is ever sent to them.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { requireBuiltBinary, runCli } from '../cli/run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'dssync-cleartext-'));
function config(name: string, over: Record<string, unknown>): string {
  const path = join(dir, `${name}.json`);
  writeFileSync(path, JSON.stringify({ organizationId: 'org', statePath: join(dir, `${name}-state.json`), status: { listen: false }, mappings: [], ...over }), { mode: 0o600 });
  return path;
}

describe('plain http:// to another host', () => {
  beforeAll(() => requireBuiltBinary());

  it('config check refuses it for baseUrl', async () => {
    const r = await runCli(['config', 'check', '--config', config('base', { baseUrl: 'http://service.invalid' })], { DSSYNC_TOKEN: 'secret-token-1' });
    expect(r.code).toBe(2);
    expect(r.stdout + r.stderr).toMatch(/baseUrl http:\/\/service\.invalid\/ is plain http:\/\/ to another host: the token and every file would cross the network in clear text/);
    expect(r.stdout + r.stderr).not.toContain('secret-token-1');
  });

  it('config check refuses it for auth.tokenUrl', async () => {
    const r = await runCli(
      ['config', 'check', '--config', config('token', { baseUrl: 'https://service.invalid', auth: { type: 'oauth2', tokenUrl: 'http://auth.invalid/token', grantType: 'client_credentials', clientId: 'c' } })],
      { DSSYNC_CLIENT_SECRET: 'client-secret-1' },
    );
    expect(r.code).toBe(2);
    expect(r.stdout + r.stderr).toMatch(/"auth\.tokenUrl" http:\/\/auth\.invalid\/token is plain http:\/\/ to another host/);
    expect(r.stdout + r.stderr).not.toContain('client-secret-1');
  });

  it('"allowInsecureHttp": true lets it through the configuration (the check then finds no such host)', async () => {
    const r = await runCli(['config', 'check', '--config', config('allowed', { baseUrl: 'http://service.invalid', allowInsecureHttp: true })], { DSSYNC_TOKEN: 'secret-token-1' });
    expect(r.stdout + r.stderr).not.toMatch(/plain http:\/\//);
    expect(r.stdout + r.stderr).not.toContain('secret-token-1');
  });
});
