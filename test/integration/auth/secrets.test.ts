/**
 * Secret files and the command provider, with real files, FIFOs and processes: a FIFO is
 * refused at once (no hang), a missing file is exit 2 naming it, a world-readable password
 * file warns, a secret never appears in the config's JSON; a token command that fails,
 * prints garbage or hangs is a clear error.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { CommandTokenProvider } from '../../../src/auth/command.js';
import { StaticTokenProvider } from '../../../src/auth/static.js';
import { describeFailure } from '../../../src/cli/exit.js';
import { ConfigError } from '../../../src/errors/config.js';
import { loadConfig } from '../../../src/config/load.js';
import { CREDENTIAL_ABSENT } from '../../../src/auth/settings.js';
import { scrub } from '../../../src/secrets.js';
import { ApiError } from '../../../src/api/errors.js';
import { rejectionOf } from '../../helpers/rejection.js';
import { FakeClock } from '../../helpers/fake-clock.js';

const dir = mkdtempSync(join(tmpdir(), 'dssync-secrets-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function configFile(body: Record<string, unknown>): string {
  const file = join(dir, `config-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify({ baseUrl: 'http://127.0.0.1:9', organizationId: 'o', statePath: join(dir, 'state.json'), ...body }));
  return file;
}

const oauth = (extra: Record<string, unknown> = {}) => ({
  auth: { type: 'oauth2', tokenUrl: 'http://127.0.0.1:9/token', grantType: 'password', clientId: 'c', username: 'u', ...extra },
});

describe('secret files', () => {
  it('a FIFO named as the token file is refused at once, not waited on', () => {
    const fifo = join(dir, 'token.fifo');
    execFileSync('mkfifo', [fifo]);
    const err = (() => {
      try {
        loadConfig({ file: configFile({ tokenFile: fifo }), env: {} });
      } catch (e) {
        return e as ConfigError;
      }
      throw new Error('expected a ConfigError');
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toContain(fifo);
    expect(err.message).toMatch(/FIFO/);
    expect(describeFailure(err).exitCode).toBe(2);
  });

  it('a FIFO as the password file is refused the same way', () => {
    const fifo = join(dir, 'password.fifo');
    execFileSync('mkfifo', [fifo]);
    expect(() => loadConfig({ file: configFile(oauth({ passwordFile: fifo })), env: {} })).toThrow(/FIFO/);
  });

  it('a missing password file is exit 2 naming it; no password at all names every way to give one', () => {
    const missing = join(dir, 'nope');
    const err = rejectionSync(() => loadConfig({ file: configFile(oauth({ passwordFile: missing })), env: {} }));
    expect(err.message).toContain(missing);
    expect(err.message).toContain('auth.passwordFile');
    expect(describeFailure(err).exitCode).toBe(2);
    const none = rejectionSync(() => loadConfig({ file: configFile(oauth()), env: {} }));
    expect(none.message).toMatch(/DSSYNC_PASSWORD.*passwordFile.*dssync-password/);
  });

  it('a world-readable password file warns with the chmod to run; the password is nowhere in the config', () => {
    const f = join(dir, 'password');
    writeFileSync(f, 'pw-SECRET-42\n');
    chmodSync(f, 0o644);
    const warnings: string[] = [];
    const c = loadConfig({ file: configFile(oauth({ passwordFile: f })), env: {}, warn: (m) => warnings.push(m) });
    expect(warnings.join('\n')).toContain(`chmod 600 ${f}`);
    expect(JSON.stringify(c)).not.toContain('pw-SECRET-42');
    expect(inspect(c, { depth: 20 })).not.toContain('pw-SECRET-42');
  });

  it('a secret written inline in the config file is refused, pointing to the file and variable', () => {
    const err = rejectionSync(() => loadConfig({ file: configFile(oauth({ password: 'inline' })), env: { DSSYNC_PASSWORD: 'x' } }));
    expect(err.message).toMatch(/auth\.password.*never written in the config file/);
  });

  it('an oversized token file is refused (wrong path, not a secret)', () => {
    const f = join(dir, 'big');
    writeFileSync(f, 'x'.repeat(100_000));
    expect(() => loadConfig({ file: configFile({ tokenFile: f }), env: {} })).toThrow(/more than the 65536/);
  });

  it('the systemd credentials dssync-password and dssync-client-secret are found in $CREDENTIALS_DIRECTORY', () => {
    const creds = mkdtempSync(join(dir, 'creds-'));
    writeFileSync(join(creds, 'dssync-password'), 'pw', { mode: 0o600 });
    writeFileSync(join(creds, 'dssync-client-secret'), 'cs', { mode: 0o600 });
    const c = loadConfig({ file: configFile(oauth()), env: { CREDENTIALS_DIRECTORY: creds } });
    expect(c.connection.auth.type === 'oauth2' && c.connection.auth.password?.read()).toBe('pw');
    expect(c.connection.auth.type === 'oauth2' && c.connection.auth.clientSecret?.describe).toContain('dssync-client-secret');
  });

  it('under the units a systemd credential wins over the file the config names (root-only there, unreadable by the service user)', () => {
    const creds = mkdtempSync(join(dir, 'creds-'));
    writeFileSync(join(creds, 'dssync-password'), 'from-credential', { mode: 0o600 });
    writeFileSync(join(creds, 'dssync-client-secret'), 'secret-from-credential', { mode: 0o600 });
    writeFileSync(join(creds, 'dssync-token'), 'token-from-credential', { mode: 0o600 });
    const missing = join(dir, 'no-such-dir', 'secret');
    const o = loadConfig({ file: configFile(oauth({ passwordFile: missing, clientSecretFile: missing })), env: { CREDENTIALS_DIRECTORY: creds } });
    if (o.connection.auth.type !== 'oauth2') throw new Error('expected oauth2');
    expect(o.connection.auth.password?.read()).toBe('from-credential');
    expect(o.connection.auth.clientSecret?.read()).toBe('secret-from-credential');
    const s = loadConfig({ file: configFile({ tokenFile: missing }), env: { CREDENTIALS_DIRECTORY: creds } });
    if (s.connection.auth.type !== 'static') throw new Error('expected static');
    expect(s.connection.auth.token.read()).toBe('token-from-credential');
    expect(s.connection.auth.token.describe).toContain('the systemd credential dssync-token');
  });

  it("a credential holding the units' default (its file did not exist) counts as not given", () => {
    const creds = mkdtempSync(join(dir, 'creds-'));
    for (const name of ['dssync-token', 'dssync-password', 'dssync-client-secret']) writeFileSync(join(creds, name), `${CREDENTIAL_ABSENT}\n`, { mode: 0o600 });
    const pw = join(dir, 'pw-file');
    writeFileSync(pw, 'from-file', { mode: 0o600 });
    const o = loadConfig({ file: configFile(oauth({ passwordFile: pw })), env: { CREDENTIALS_DIRECTORY: creds } });
    expect(o.connection.auth.type === 'oauth2' && o.connection.auth.password?.read()).toBe('from-file');
    expect(o.connection.auth.type === 'oauth2' && o.connection.auth.clientSecret).toBeUndefined();
    const none = rejectionSync(() => loadConfig({ file: configFile(oauth()), env: { CREDENTIALS_DIRECTORY: creds } }));
    expect(none.message).toMatch(/no password for the account u: .*dssync-password/);
    const noToken = rejectionSync(() => loadConfig({ file: configFile({}), env: { CREDENTIALS_DIRECTORY: creds } }));
    expect(noToken.message).toMatch(/no access token/);
    // The marker is not a secret: nothing registers it for scrubbing.
    expect(scrub(`x ${CREDENTIAL_ABSENT} y`)).toBe(`x ${CREDENTIAL_ABSENT} y`);
  });

  it('a rotated token file is picked up', async () => {
    const f = join(dir, 'rot');
    writeFileSync(f, 'first-token', { mode: 0o600 });
    const c = loadConfig({ file: configFile({ tokenFile: f }), env: {} });
    if (c.connection.auth.type !== 'static') throw new Error('expected static');
    const p = new StaticTokenProvider(c.connection.auth.token, c.connection.auth.token.path);
    expect(await p.token()).toBe('first-token');
    writeFileSync(f, 'second-token-longer', { mode: 0o600 });
    expect(await p.renewAfterRejection('first-token')).toBe('second-token-longer');
  });

  it('looks at a token file for rotation once a second of the monotonic clock: a wall step back does not stall it', async () => {
    const f = join(dir, 'rot-step');
    writeFileSync(f, 'first-token', { mode: 0o600 });
    const c = loadConfig({ file: configFile({ tokenFile: f }), env: {} });
    if (c.connection.auth.type !== 'static') throw new Error('expected static');
    const clock = new FakeClock(1_000_000);
    const p = new StaticTokenProvider(c.connection.auth.token, c.connection.auth.token.path, clock);
    expect(await p.token()).toBe('first-token');
    writeFileSync(f, 'second-token-longer', { mode: 0o600 });
    expect(await p.token()).toBe('first-token'); // within the second: not looked at
    clock.stepWall(-3600_000);
    clock.tick(1000);
    expect(await p.token()).toBe('second-token-longer');
  });
});

describe('organizationHeader', () => {
  it('an invalid header name is exit 2 naming the setting, from the file and from DSSYNC_ORG_HEADER', () => {
    const fromFile = rejectionSync(() => loadConfig({ file: configFile({ organizationHeader: 'X Org: Id', tokenFile: '/dev/null' }), env: { DSSYNC_TOKEN: 't' } }));
    expect(fromFile.message).toMatch(/organizationHeader.*not a valid HTTP header name/);
    const fromEnv = rejectionSync(() => loadConfig({ file: configFile({}), env: { DSSYNC_TOKEN: 't', DSSYNC_ORG_HEADER: 'Bad Header' } }));
    expect(fromEnv.message).toMatch(/DSSYNC_ORG_HEADER/);
    expect(describeFailure(fromEnv).exitCode).toBe(2);
  });

  it('defaults to X-Service-Organization-Id; the environment wins over the file', () => {
    expect(loadConfig({ file: configFile({}), env: { DSSYNC_TOKEN: 't' } }).connection.organizationHeader).toBe('X-Service-Organization-Id');
    const c = loadConfig({ file: configFile({ organizationHeader: 'X-Wikit-Organization-Id' }), env: { DSSYNC_TOKEN: 't', DSSYNC_ORG_HEADER: 'X-Other-Org' } });
    expect(c.connection.organizationHeader).toBe('X-Other-Org');
  });
});

describe('the command provider', () => {
  const script = (name: string, body: string): string => {
    const f = join(dir, name);
    writeFileSync(f, `#!/bin/sh\n${body}\n`, { mode: 0o700 });
    return f;
  };

  it('reads access_token and expires_in', async () => {
    const p = new CommandTokenProvider({ command: [script('ok.sh', 'echo \'{"access_token":"cmd-token-1","expires_in":60}\'')], timeoutMs: 5_000 });
    expect(await p.token()).toBe('cmd-token-1');
    expect(p.status().expiresAt).toBeGreaterThan(Date.now());
  });

  it('a non-zero exit is a clear error with its stderr; exit 3 is "credentials refused"', async () => {
    const fail = new CommandTokenProvider({ command: [script('fail.sh', 'echo "no session" >&2; exit 1')], timeoutMs: 5_000 });
    const err = await rejectionOf(fail.token(), ApiError);
    expect(err.message).toMatch(/fail\.sh exited with status 1: no session/);
    const refused = new CommandTokenProvider({ command: [script('refused.sh', 'exit 3')], timeoutMs: 5_000 });
    expect(describeFailure(await rejectionOf(refused.token(), ApiError)).exitCode).toBe(3);
  });

  it('garbage on stdout is a clear error that does not repeat it', async () => {
    const p = new CommandTokenProvider({ command: [script('garbage.sh', 'echo "password=hunter2"')], timeoutMs: 5_000 });
    const err = await rejectionOf(p.token(), ApiError);
    expect(err.message).toMatch(/not JSON/);
    expect(err.message).not.toContain('hunter2');
    const noToken = new CommandTokenProvider({ command: [script('notoken.sh', 'echo \'{"token":1}\'')], timeoutMs: 5_000 });
    expect((await rejectionOf(noToken.token(), ApiError)).message).toMatch(/access_token/);
  });

  it('a command that hangs is killed after its timeout', async () => {
    const p = new CommandTokenProvider({ command: [script('hang.sh', 'exec sleep 30')], timeoutMs: 500 });
    const err = await rejectionOf(p.token(), ApiError);
    expect(err.message).toMatch(/did not finish within 0.5 s/);
  });

  it('a command that cannot be started names it', async () => {
    const p = new CommandTokenProvider({ command: [join(dir, 'no-such-helper')], timeoutMs: 1_000 });
    expect((await rejectionOf(p.token(), ApiError)).message).toMatch(/cannot be started \(ENOENT\)/);
  });
});

function rejectionSync(fn: () => unknown): Error {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected an error');
}
