#!/usr/bin/env node
// The real downgrade (docs/upgrading.md, "What a downgrade does"): each release already out
// is built from this repository's history into a cache folder, then run (`dssync sync`) on a
// state written by the current build, against the emulator. Each must refuse the state (its
// refusal exit code, a message saying why) and leave every byte of it as it was. Two states:
// a fresh one (written by the current build alone), and one carried over from 0.1.0 (0.1.0
// syncs first, then the current build upgrades it).
//
//   npm run build && node scripts/downgrade-check.mjs            # the working tree's build
//   node scripts/downgrade-check.mjs --current <commit>          # another commit's, built too
//   node scripts/downgrade-check.mjs --cache /tmp/other          # default /tmp/dssync-releases
//
// The first run needs the network (npm ci of each release); later runs reuse the cache.
// Prints one line per case and exits 1 when a release did not refuse or changed a byte.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The releases out: 0.1.0 (the last commit of its day, 2026-11-24: state format 3), 0.2.0 as
 * the commit that set its version (de9175f, still format 3) and as the last commit before
 * 0.3.0's (6b1223b, format 4, the 0.2.0 the CHANGELOG describes).
 */
export const RELEASES = [
  { version: '0.1.0', commit: '5c4c7cc' },
  { version: '0.2.0', commit: 'de9175f' },
  { version: '0.2.0-format4', commit: '6b1223b' },
];
const TOKEN = 'downgrade-token';
const ORG = 'downgrade-org';

const root = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const option = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const cache = option('--cache') ?? join(tmpdir(), 'dssync-releases');

/** Builds `commit` into the cache (once) and returns its CLI's entry point. */
function build(name, commit) {
  const dir = join(cache, name);
  const cli = join(dir, 'dist/src/cli/main.js');
  if (existsSync(cli)) return cli;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  console.error(`building ${name} (${commit}) in ${dir}…`);
  execFileSync('sh', ['-c', `git -C "${root}" archive ${commit} | tar -x -C "${dir}"`], { stdio: 'inherit' });
  // npm ci runs the package's prepare script, which builds it.
  execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, DSSYNC_COMMIT: commit } });
  if (!existsSync(cli)) throw new Error(`${name}: npm ci did not build ${cli}`);
  return cli;
}

/** Every file of the state folder, with its bytes' hash. */
function stateBytes(dir) {
  const out = {};
  for (const f of readdirSync(dir).sort()) {
    if (f.endsWith('.lock')) continue; // the lock file is the process's, not the state
    const p = join(dir, f);
    if (statSync(p).isFile()) out[f] = createHash('sha256').update(readFileSync(p)).digest('hex').slice(0, 16);
  }
  return out;
}

function sync(cli, ws) {
  const r = spawnSync(process.execPath, [cli, 'sync', '--config', ws.config], { env: { ...process.env, DSSYNC_TOKEN: TOKEN, DSSYNC_LOG_LEVEL: 'warn' }, encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, out: `${r.stdout}${r.stderr}`.trim() };
}

function workspace(url, name) {
  const dir = mkdtempSync(join(tmpdir(), `dssync-downgrade-${name}-`));
  const share = join(dir, 'share');
  mkdirSync(share);
  for (let i = 0; i < 9; i++) writeFileSync(join(share, `file-${i}.txt`), `file ${i}\n`);
  const stateDir = join(dir, 'state');
  const config = join(dir, 'config.json');
  // Only keys every release reads (0.1.0 rejects unknown keys).
  writeFileSync(config, JSON.stringify({ baseUrl: url, organizationId: ORG, statePath: join(stateDir, 'state.json'), mappings: [{ id: 'docs', path: share, dataSource: { name: `Downgrade ${name}`, llmConnectorIds: ['conn-1'] } }] }, null, 2));
  return { dir, config, stateDir };
}

async function startEmulator(cli) {
  const child = spawn(process.execPath, [cli, 'emulator', '--port', '0', '--token', TOKEN, '--org', ORG], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise((resolve, reject) => {
    let text = '';
    child.stdout.on('data', (b) => {
      text += b;
      const m = /listening on (\S+)/.exec(text);
      if (m) resolve(m[1]);
    });
    child.on('exit', (code) => reject(new Error(`the emulator exited (${code})`)));
  });
  return { url, stop: () => child.kill('SIGTERM') };
}

const current = option('--current') ? build(`current-${option('--current')}`, option('--current')) : join(root, 'dist/src/cli/main.js');
if (!existsSync(current)) throw new Error(`${current} is missing: npm run build first`);
const olds = RELEASES.map((r) => ({ ...r, cli: build(r.version, r.commit) }));
const emu = await startEmulator(join(root, 'dist/src/cli/main.js'));
let failed = false;
try {
  for (const carried of [false, true]) {
    for (const old of olds) {
      const name = `${carried ? 'from-0.1.0' : 'fresh'}-${old.version}`;
      const ws = workspace(emu.url, name);
      const steps = carried ? [['0.1.0', olds[0].cli], ['current', current]] : [['current', current]];
      for (const [who, cli] of steps) {
        const r = sync(cli, ws);
        if (r.code !== 0) throw new Error(`${name}: the ${who} build's sync exited ${r.code}: ${r.out}`);
      }
      const before = stateBytes(ws.stateDir);
      const r = sync(old.cli, ws);
      const after = stateBytes(ws.stateDir);
      const same = JSON.stringify(before) === JSON.stringify(after);
      const refused = r.code !== 0 && /newer dssync|state format|reads (versions|formats) up to/.test(r.out);
      if (!same || !refused) failed = true;
      console.log(`${refused && same ? 'ok  ' : 'FAIL'} ${old.version} on a ${carried ? 'state carried over from 0.1.0' : 'fresh state'}: exit ${r.code}, state ${same ? 'unchanged' : `CHANGED ${JSON.stringify(before)} -> ${JSON.stringify(after)}`}: ${r.out.split('\n').slice(-3).join(' | ')}`);
      rmSync(ws.dir, { recursive: true, force: true });
    }
  }
} finally {
  emu.stop();
}
process.exit(failed ? 1 : 0);
