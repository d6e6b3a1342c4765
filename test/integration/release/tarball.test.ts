/**
 * The release tarball (issue 26.1, issue 27.1): `npm run release` packs the daemon package
 * only, with its production tree as tested; installed into an empty prefix it runs, carries
 * none of the emulator's closure, and `dssync emulator` / `dssync demo` say how to get the
 * emulator. Runs scripts/release.mjs on the dist/ that `npm test` built, offline (from the
 * npm cache the clone's `npm ci` filled).
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONVERGED, checkConvergence, createWorkspace } from '../../helpers/mirror-check.js';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../../../', import.meta.url));
const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
/** Installed with the emulator before issue 27; none may be in the daemon's tree. */
const EMULATOR_ONLY = ['fastify', '@fastify/multipart', 'mammoth', 'pdfjs-dist', '@napi-rs/canvas', '@dssync/emulator'];

/** Every package folder under node_modules, nested ones included, as "name" or "@scope/name". */
function installedPackages(nodeModules: string): string[] {
  const found: string[] = [];
  const visit = (dir: string): void => {
    if (!existsSync(dir)) return;
    for (const entry of readdirSync(dir)) {
      if (entry.startsWith('.')) continue;
      const names = entry.startsWith('@') ? readdirSync(join(dir, entry)).map((n) => `${entry}/${n}`) : [entry];
      for (const name of names) {
        found.push(name);
        visit(join(dir, name, 'node_modules'));
      }
    }
  };
  visit(nodeModules);
  return found;
}

async function dssync(bin: string, args: string[], extraEnv: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    // A bounded wait: an emulator that starts instead of refusing fails here, not at the test's timeout.
    const { stdout, stderr } = await run(bin, args, { env: { ...process.env, NO_COLOR: '1', ...extraEnv }, timeout: 20_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('the release tarball', () => {
  let work: string;
  let prefix: string;
  let bin: string;
  let installOutput: string;

  beforeAll(async () => {
    work = await mkdtemp(join(tmpdir(), 'dssync-release-'));
    prefix = join(work, 'prefix');
    await run(process.execPath, [join(root, 'scripts/release.mjs'), '--no-build', '--offline', '--out', work], { cwd: root, maxBuffer: 64 * 1024 * 1024 });
    const installed = await run('npm', ['install', '-g', '--prefix', prefix, '--offline', '--no-audit', '--no-fund', join(work, `dssync-${version}.tgz`)], { cwd: work, maxBuffer: 64 * 1024 * 1024 });
    installOutput = installed.stdout + installed.stderr;
    bin = join(prefix, 'bin', 'dssync');
  }, 600_000);

  afterAll(async () => {
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('installs into an empty prefix without an engine warning and prints its version', async () => {
    expect(installOutput).not.toContain('EBADENGINE');
    const got = await dssync(bin, ['--version']);
    expect(got.code).toBe(0);
    expect(got.stdout.trim()).toMatch(new RegExp(`^${version.replaceAll('.', '\\.')} \\(commit ([0-9a-f]{12}(-dirty)?|unknown)\\)$`));
  });

  it('mirrors a folder (against the emulator of this clone: the install has none)', async () => {
    const ws = await createWorkspace();
    try {
      await ws.write('a.txt', 'alpha');
      await ws.write('docs/b.md', '# beta');
      const got = await dssync(bin, ['sync', '--config', ws.configPath], ws.env);
      expect(got.stderr).toBe('');
      expect(got.code).toBe(0);
      expect(await checkConvergence(ws)).toEqual(CONVERGED);
    } finally {
      await ws.close();
    }
  });

  it("carries the watch's native module built (docs/watch.md, \"The watch itself\"), and it loads", () => {
    const module = join(prefix, 'lib', 'node_modules', 'dssync', 'dist', 'src', 'native', 'inotify.node');
    expect(existsSync(module)).toBe(true);
    const loaded = createRequire(import.meta.url)(module) as Record<string, unknown>;
    expect(Object.keys(loaded).sort()).toEqual(['add', 'close', 'open', 'remove', 'startAll']);
  });

  it('carries none of the emulator, nor what only the emulator needs', () => {
    const nodeModules = join(prefix, 'lib', 'node_modules', 'dssync', 'node_modules');
    const packages = installedPackages(nodeModules);
    expect(packages).toContain('pino'); // the tree is there, and bundled
    expect(packages.filter((p) => EMULATOR_ONLY.includes(p))).toEqual([]);
    expect(existsSync(join(prefix, 'lib', 'node_modules', 'dssync', 'dist', 'src', 'emulator'))).toBe(false);
  });

  it('stays under 25 MB installed (issue 35: the converters included)', async () => {
    const { stdout } = await run('du', ['-sb', join(prefix, 'lib', 'node_modules', 'dssync')]);
    expect(Number(stdout.split('\t')[0])).toBeLessThan(25_000_000);
  });

  it('ships the changelog, the MIT licence and the bundled packages\' licences; no development script, no demo/ (issue 37.4)', () => {
    const installed = join(prefix, 'lib', 'node_modules', 'dssync');
    const top = readdirSync(installed).sort();
    expect(top).toEqual(expect.arrayContaining(['CHANGELOG.md', 'LICENSE', 'README.md', 'THIRD-PARTY-NOTICES.md', 'config.example.json', 'dist', 'systemd']));
    expect(top.filter((f) => ['scripts', 'demo', 'test', 'bench', 'packages'].includes(f))).toEqual([]);
    expect(readFileSync(join(installed, 'LICENSE'), 'utf8')).toContain('MIT License');
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { license: string; scripts?: unknown };
    expect(manifest.license).toBe('MIT');
    expect(manifest.scripts).toBeUndefined();
    // Every bundled package is named with its licence; pino's text is there.
    const notices = readFileSync(join(installed, 'THIRD-PARTY-NOTICES.md'), 'utf8');
    const bundled = new Set(installedPackages(join(installed, 'node_modules')));
    for (const name of bundled) expect(notices, name).toContain(`## ${name}@`);
    expect(notices).toMatch(/## pino@[\d.]+\n\nLicence: MIT\n\n```\n[^`]*Permission is hereby granted/);
  });

  it.each(['emulator', 'demo'])('dssync %s exits 1 and says how to get the emulator', async (command) => {
    const got = await dssync(bin, [command]);
    expect(got.code).toBe(1);
    expect(got.stdout).toBe('');
    expect(got.stderr).toContain(`dssync ${command} needs the service emulator, the package @dssync/emulator, which is not installed`);
    expect(got.stderr).toContain(`From a clone of the dssync repository: npm ci, then npx dssync ${command}`);
  });
});
