/**
 * `dssync probe` against the emulator (built binary, real loopback HTTP), in both header
 * modes: read-only by default, the --write round trip leaves nothing behind, --save writes
 * redacted fixtures; and `dssync auth status` says which provider works, never the token.
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '@dssync/emulator';
import { TOKEN_PATH } from '@dssync/emulator';
import { jsonOf, requireBuiltBinary, runCli } from '../cli/run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'dssync-probe-'));

describe.each([
  ['X-Service-Organization-Id', undefined],
  ['X-Wikit-Organization-Id', 'X-Wikit-Organization-Id'],
])('dssync probe with the %s header', (header, orgHeader) => {
  let emu: RunningEmulator;
  beforeAll(async () => {
    requireBuiltBinary();
    emu = await startEmulator({ ...(orgHeader ? { orgHeader } : {}), oidc: { tokenTtlSeconds: 60 } });
  });
  afterAll(() => emu.close());
  const env = (): Record<string, string> => ({ DSSYNC_BASE_URL: emu.url, DSSYNC_ORG: 'dev-org', DSSYNC_TOKEN: 'dev-token', ...(orgHeader ? { DSSYNC_ORG_HEADER: orgHeader } : {}) });

  it('read-only by default: lists, an error body, nothing written', { timeout: 60_000 }, async () => {
    const before = emu.stats().store;
    const r = await runCli(['probe', '--json'], env());
    expect(r.code, r.stderr).toBe(0);
    const report = jsonOf<{ organizationHeader: string; steps: { step: string; status: number }[]; errorBodyShape: string }>(r);
    expect(report.organizationHeader).toBe(header);
    expect(report.steps.map((s) => s.step)).toContain('list-data-sources');
    expect(report.errorBodyShape).toContain('error');
    expect(emu.stats().store).toEqual(before);
  });

  it('--write: a round trip in a scratch data source deleted at the end; --save writes redacted fixtures', { timeout: 60_000 }, async () => {
    const save = join(dir, `save-${header}`);
    const r = await runCli(['probe', '--write', '--connector', 'conn-1', '--save', save, '--json'], env());
    expect(r.code, r.stderr).toBe(0);
    const report = jsonOf<{ steps: { step: string; status: number }[]; updateClearsAbsentFields: boolean | null; renamesDataSource: boolean | null }>(r);
    const steps = report.steps.map((s) => s.step);
    expect(steps).toEqual(expect.arrayContaining(['create-data-source', 'rename-data-source', 'upload-two-files', 'update-name-only', 'get-after-partial-update', 'delete-data-source']));
    expect(report.updateClearsAbsentFields).not.toBeNull();
    // A data source dssync creates takes its name with this update (reliability.md, "A data source dssync creates").
    expect(report.renamesDataSource).toBe(true);
    expect(emu.stats().store.dataSources).toBe(0);
    const files = readdirSync(save);
    expect(files).toContain('report.json');
    for (const f of files) {
      const text = readFileSync(join(save, f), 'utf8');
      expect(text).not.toContain('dev-token');
      expect(text).not.toContain('dev-org');
    }
  });

  it('--write learns what the service does to an uploaded name and whether an update renames (issue 23, defect 5)', { timeout: 60_000 }, async () => {
    type Report = { updateRenames: boolean | null; uploadNames: { sent: string; shown: string | null }[] };
    const plain = await runCli(['probe', '--write', '--connector', 'conn-1', '--json'], env());
    expect(plain.code, plain.stderr).toBe(0);
    const as = jsonOf<Report>(plain);
    expect(as.updateRenames).toBe(true);
    expect((as as Report & { updateSetsUrl: boolean | null }).updateSetsUrl).toBe(true);
    expect(as.uploadNames).toHaveLength(5);
    expect(as.uploadNames.find((n) => n.sent.includes('\\'))?.shown).toBe('probe-back\\slash.txt');
    // A service that reads the name as a quoted-string and ignores a new name.
    emu.setFaults({ rewriteNames: 'quoted', ignoreRename: true });
    try {
      const r = await runCli(['probe', '--write', '--connector', 'conn-1'], env());
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/an update renames the document: NO/);
      expect(r.stdout).toMatch(/an update sets the url: yes/);
      expect(r.stdout).toContain('uploaded name "probe-back\\\\slash.txt" shown as "probe-backslash.txt"');
    } finally {
      emu.setFaults({});
    }
    // A service that ignores a new url (issue 34, case 8's kin).
    emu.setFaults({ ignoreUrl: true });
    try {
      const r = await runCli(['probe', '--write', '--connector', 'conn-1'], env());
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/an update sets the url: NO/);
    } finally {
      emu.setFaults({});
    }
    expect(emu.stats().store.dataSources).toBe(0);
  });

  it('--write reports what the service does to the names it stores: case, extension, suffix, length (issue 34, cases 6-8)', { timeout: 60_000 }, async () => {
    type Report = { nameRule: Record<string, unknown> | null };
    const plain = jsonOf<Report>(await runCli(['probe', '--write', '--connector', 'conn-1', '--json'], env()));
    expect(plain.nameRule).toEqual({});
    emu.setFaults({ nameRules: ['lower', 'no-extension', 'suffix'], nameMaxBytes: 255 });
    try {
      const json = jsonOf<Report>(await runCli(['probe', '--write', '--connector', 'conn-1', '--json'], env()));
      expect(json.nameRule).toEqual({ lower: true, noExtension: true, suffix: ' (1)', maxBytes: 255 });
      const r = await runCli(['probe', '--write', '--connector', 'conn-1'], env());
      expect(r.stdout).toMatch(/names stored: the service lower-cases names, drops the extension, appends " \(1\)", cuts names at 255 bytes/);
      emu.setFaults({ ignoreRename: true });
      const ignored = await runCli(['probe', '--write', '--connector', 'conn-1'], env());
      expect(ignored.stdout).toMatch(/an update renames the document: NO/);
      expect(ignored.stdout).toMatch(/names stored: not tested/);
    } finally {
      emu.setFaults({});
    }
    expect(emu.stats().store.dataSources).toBe(0);
  });

  it('--write without --connector is a usage error (exit 2)', async () => {
    const r = await runCli(['probe', '--write'], env());
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--connector');
  });

  it('auth status with oauth2: provider, works, expiry; never the token or the password', { timeout: 60_000 }, async () => {
    const config = join(dir, `auth-${header}.json`);
    const { writeFileSync } = await import('node:fs');
    writeFileSync(config, JSON.stringify({ baseUrl: emu.url, organizationId: 'dev-org', ...(orgHeader ? { organizationHeader: orgHeader } : {}), auth: { type: 'oauth2', tokenUrl: `${emu.url}${TOKEN_PATH}`, grantType: 'password', clientId: 'dssync', username: 'dev-user' } }));
    const r = await runCli(['auth', 'status', '--config', config, '--json'], { DSSYNC_PASSWORD: 'dev-password' });
    expect(r.code, r.stderr).toBe(0);
    expect(jsonOf(r)).toMatchObject({ provider: 'oauth2', works: true, organizationHeader: header });
    expect(r.stdout + r.stderr).not.toContain('dev-password');
    const bad = await runCli(['auth', 'status', '--config', config], { DSSYNC_PASSWORD: 'wrong-pass-123' });
    expect(bad.code).toBe(3);
    expect(bad.stdout + bad.stderr).toContain('credentials refused');
    expect(bad.stdout + bad.stderr).not.toContain('wrong-pass-123');
  });
});
