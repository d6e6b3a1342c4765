/**
 * Every auth type under the shipped unit's credentials, without a running systemd: the
 * credentials directory is built the way systemd builds it from the unit's
 * LoadCredential=/SetCredential= lines (the file's content when it exists, else the
 * SetCredential= default), with /etc/dssync standing for a temporary folder; then a real
 * `dssync run` gets $CREDENTIALS_DIRECTORY, as under systemd, and must mirror a folder
 * against the emulator (its OIDC token endpoint for the two grants).
 *
 * The config names secret files holding wrong values, as an operator's config would name
 * root-only files the service's dynamic user cannot read: the run succeeds only because the
 * credential wins over them. No DSSYNC_TOKEN reaches the daemon.
 */
import { copyFile, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { TOKEN_PATH } from '@dssync/emulator';
import { checkFolderConvergence, TOKEN, type Workspace } from '../../helpers/mirror-check.js';
import { daemonWorkspace, startDaemon, waitConverged, type DaemonProcess } from '../daemon/daemon-process.js';

const UNIT = fileURLToPath(new URL('../../../systemd/dssync.service', import.meta.url));

/** What systemd does at start with the unit's credential lines (systemd.exec(5), SetCredential=). */
async function credentialsDirectory(unitText: string, etc: string, into: string, extraLines: string[] = []): Promise<string> {
  await mkdir(into, { mode: 0o700 });
  const lines = [...unitText.split('\n'), ...extraLines].map((l) => l.trim());
  const defaults = new Map<string, string>();
  for (const l of lines) {
    const m = /^SetCredential=([^:]+):(.*)$/.exec(l);
    if (m) defaults.set(m[1] as string, m[2] as string);
  }
  for (const l of lines) {
    const m = /^LoadCredential=([^:]+):(.+)$/.exec(l);
    if (!m) continue;
    const [, id, path] = m as unknown as [string, string, string];
    const source = path.replace(/^\/etc\/dssync\//, `${etc}/`);
    if (existsSync(source)) await copyFile(source, join(into, id));
    else if (defaults.has(id)) await writeFile(join(into, id), defaults.get(id) as string, { mode: 0o400 });
    else throw new Error(`systemd would fail the unit with 243/CREDENTIALS: ${path} is missing and has no SetCredential= default`);
  }
  return into;
}

interface AuthCase {
  name: string;
  /** The files an operator puts in /etc/dssync (root-only, 0600). */
  etcFiles: Record<string, string>;
  /** The config's auth keys (wrong files where a file is named). */
  config: (w: Workspace, wrong: string) => Record<string, unknown>;
  /** Lines a drop-in adds (the command's own secret). */
  dropIn?: string[];
  secret: string;
}

const CASES: AuthCase[] = [
  { name: 'static token', etcFiles: { token: TOKEN }, config: (_w, wrong) => ({ tokenFile: wrong }), secret: TOKEN },
  {
    name: 'OIDC password grant',
    etcFiles: { password: 'dev-password' },
    config: (w, wrong) => ({ auth: { type: 'oauth2', tokenUrl: `${w.emu.url}${TOKEN_PATH}`, grantType: 'password', clientId: 'dssync', username: 'dev-user', passwordFile: wrong } }),
    secret: 'dev-password',
  },
  {
    name: 'OIDC client credentials',
    etcFiles: { 'client-secret': 'dev-client-secret' },
    config: (w, wrong) => ({ auth: { type: 'oauth2', tokenUrl: `${w.emu.url}${TOKEN_PATH}`, grantType: 'client_credentials', clientId: 'dssync-service', clientSecretFile: wrong } }),
    secret: 'dev-client-secret',
  },
  {
    name: 'token command (its own secret as a credential of a drop-in)',
    etcFiles: { 'command-key': TOKEN },
    dropIn: ['LoadCredential=dssync-command-key:/etc/dssync/command-key'],
    config: () => ({ auth: { type: 'command', command: ['/bin/sh', '-c', 'printf \'{"access_token": "%s", "expires_in": 300}\' "$(cat "$CREDENTIALS_DIRECTORY/dssync-command-key")"'] } }),
    secret: TOKEN,
  },
];

describe('dssync run with $CREDENTIALS_DIRECTORY as the shipped unit makes it', () => {
  let w: Workspace | undefined;
  let d: DaemonProcess | undefined;
  afterEach(async () => {
    await d?.kill();
    await w?.close();
    d = undefined;
    w = undefined;
  });

  it.for(CASES)('$name', { timeout: 90_000 }, async (c) => {
    w = await daemonWorkspace();
    const etc = await mkdtemp(join(w.dir, 'etc-dssync-'));
    for (const [file, value] of Object.entries(c.etcFiles)) await writeFile(join(etc, file), `${value}\n`, { mode: 0o600 });
    const wrong = join(w.dir, 'wrong-secret');
    await writeFile(wrong, 'not-the-secret\n', { mode: 0o600 });
    const config = JSON.parse(await readFile(w.configPath, 'utf8')) as Record<string, unknown>;
    await writeFile(w.configPath, JSON.stringify({ ...config, ...c.config(w, wrong) }), { mode: 0o600 });
    const creds = await credentialsDirectory(readFileSync(UNIT, 'utf8'), etc, join(w.dir, 'credentials'), c.dropIn);

    await w.write('a.txt', 'mirrored under the unit');
    // `env -u`: the workspace's DSSYNC_TOKEN must not reach the daemon.
    d = await startDaemon(w, { prefix: ['env', '-u', 'DSSYNC_TOKEN'], env: { CREDENTIALS_DIRECTORY: creds } });
    await waitConverged(w, 'the first mirror', 60_000, () => checkFolderConvergence(w!.emu, w!.dataSourceId(), w!.share));
    expect((await d.healthz()).body.status).toBe('ok');
    const oidc = w.emu.oidc.counts;
    if (c.name.includes('password')) expect(oidc.password).toBeGreaterThan(0);
    if (c.name.includes('client credentials')) expect(oidc.client_credentials).toBeGreaterThan(0);
    expect(oidc.refused).toBe(0);
    for (const out of [d.stdout(), d.stderr(), JSON.stringify(await d.status())]) expect(out).not.toContain(c.secret);
    expect((await d.stop()).code).toBe(0);
  });

  it('a credential whose file is missing and has no default would fail the unit (the check above is not vacuous)', async () => {
    const dir = await mkdtemp(join(process.env.TMPDIR ?? '/tmp', 'dssync-creds-'));
    const text = 'LoadCredential=dssync-token:/etc/dssync/token\n';
    await expect(credentialsDirectory(text, join(dir, 'etc'), join(dir, 'c'))).rejects.toThrow(/243\/CREDENTIALS/);
  });
});
