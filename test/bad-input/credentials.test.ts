/**
 * Bad-input catalogue: refused credentials and a wrong organization header (issue 25 items
 * 2 and 3), with the built binary against the emulator's OpenID Connect token endpoint.
 * Each message names the endpoint that refused, what it said (error and description) and
 * the setting to change, never a secret; `dssync run` with a refused password ends with
 * exit 3 after exactly one grant (the units do not restart exit 3: an account lock avoided).
 * docs/reliability.md ("Refused credentials and headers (issue 25)") holds the table.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireBuiltBinary, runCli } from '../integration/cli/run-cli.js';
import { TOKEN_PATH } from '@dssync/emulator';
import { createWorld, TOKEN, variantConfig, type World } from './world.js';

let world: World;
beforeAll(async () => {
  requireBuiltBinary();
  world = await createWorld();
});
afterAll(async () => {
  await world?.close();
});

const WRONG_PASSWORD = 'wrong-password-27182818';
const WRONG_SECRET = 'wrong-client-secret-1618';

/** A config of the world with `auth` (and its own state file: `run` takes the lock). */
function oauth2Config(name: string, auth: Record<string, unknown>): Promise<string> {
  return variantConfig(world, name, (c) => {
    c.auth = { type: 'oauth2', tokenUrl: `${world.ws.emu.url}${TOKEN_PATH}`, ...auth };
    c.statePath = join(world.ws.dir, name, 'state.json');
  });
}
const passwordAuth = { grantType: 'password', clientId: 'dssync', username: 'dev-user' };

describe('refused credentials name the token endpoint, its answer and the setting', () => {
  it('R01 a wrong password: exit 3, the endpoint, invalid_grant and its description, auth.username and the password source', async () => {
    const config = await oauth2Config('c1', passwordAuth);
    const r = await runCli(['datasources', 'list', '--config', config], { DSSYNC_PASSWORD: WRONG_PASSWORD });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`the token endpoint ${world.ws.emu.url}${TOKEN_PATH}`);
    expect(r.stderr).toContain('invalid_grant: Invalid user credentials (HTTP 401)');
    expect(r.stderr).toContain('Check "auth.username" (dev-user) and the password (from the DSSYNC_PASSWORD environment variable)');
    expect(r.stderr).not.toMatch(/Check the token|DSSYNC_TOKEN/);
    expect(r.stdout + r.stderr).not.toContain(WRONG_PASSWORD);
  });

  it('R02 config check with a wrong password names the token endpoint and the grant error, not the service', async () => {
    const config = await oauth2Config('c2', passwordAuth);
    const r = await runCli(['config', 'check', '--config', config], { DSSYNC_PASSWORD: WRONG_PASSWORD });
    expect(r.code).toBe(3);
    expect(r.stdout).toMatch(new RegExp(`✗ credentials refused by the token endpoint ${world.ws.emu.url}${TOKEN_PATH} .*invalid_grant: Invalid user credentials`));
    expect(r.stdout).toContain('Check "auth.username" (dev-user) and the password');
    expect(r.stdout).not.toMatch(/credentials refused \(HTTP \d+\) by http/);
    expect(r.stdout + r.stderr).not.toContain(WRONG_PASSWORD);
  });

  it('R03 a wrong client secret: invalid_client, auth.clientId and where the secret comes from', async () => {
    const config = await oauth2Config('c3', { grantType: 'client_credentials', clientId: 'dssync-service' });
    const r = await runCli(['datasources', 'list', '--config', config], { DSSYNC_CLIENT_SECRET: WRONG_SECRET });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`the token endpoint ${world.ws.emu.url}${TOKEN_PATH}`);
    expect(r.stderr).toContain('invalid_client');
    expect(r.stderr).toContain('Check "auth.clientId" (dssync-service), the client secret (from the DSSYNC_CLIENT_SECRET environment variable)');
    expect(r.stdout + r.stderr).not.toContain(WRONG_SECRET);
  });

  it('R04 a wrong organization header: the 400 points at organizationHeader, not baseUrl or tls.caFile', async () => {
    const config = await variantConfig(world, 'c4', (c) => {
      c.organizationHeader = 'X-Wrong-Org';
    });
    const env = { DSSYNC_TOKEN: TOKEN };
    const list = await runCli(['datasources', 'list', '--config', config], env);
    // A configuration error, as in sync and run (issue 37.2).
    expect(list.code).toBe(2);
    expect(list.stderr).toContain('HTTP 400');
    expect(list.stderr).toContain('check "organizationHeader" (dssync sends the organization id in X-Wrong-Org');
    const check = await runCli(['config', 'check', '--config', config], env);
    expect(check.code).not.toBe(0);
    expect(check.stdout).toContain('check "organizationHeader" (dssync sends the organization id in X-Wrong-Org');
    expect(check.stdout).not.toContain('tls.caFile');
    expect(check.stdout + check.stderr).not.toContain(TOKEN);
    await world.expectNothingLost();
  });
});

describe('dssync run with refused credentials', () => {
  it('R05 a wrong password ends the daemon at start with exit 3 after exactly one grant', { timeout: 60_000 }, async () => {
    const config = await oauth2Config('c5', passwordAuth);
    const before = { ...world.ws.emu.oidc.counts };
    const r = await runCli(['run', '--config', config], { DSSYNC_PASSWORD: WRONG_PASSWORD, DSSYNC_LOG_LEVEL: 'info' });
    expect(r.code).toBe(3);
    expect(world.ws.emu.oidc.counts.password - before.password).toBe(1);
    expect(r.stderr).toContain('invalid_grant: Invalid user credentials');
    expect(r.stderr).toContain('Check "auth.username" (dev-user)');
    expect(r.stdout).toContain('the credentials were refused at start; not retrying (exit 3)');
    expect(r.stdout + r.stderr).not.toContain(WRONG_PASSWORD);
    await world.expectNothingLost();
  });

  it('R06 a refused static token ends the daemon at start with exit 3', { timeout: 60_000 }, async () => {
    const config = await variantConfig(world, 'c6', (c) => {
      c.statePath = join(world.ws.dir, 'c6', 'state.json');
    });
    const r = await runCli(['run', '--config', config], { DSSYNC_TOKEN: 'not-the-right-token-42' });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('HTTP 401');
    expect(r.stdout + r.stderr).not.toContain('not-the-right-token-42');
    await world.expectNothingLost();
  });
});
