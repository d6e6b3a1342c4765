// `npm run release`: the release tarball, release/dssync-X.Y.Z.tgz (docs/upgrading.md).
//
// 1. Builds dist/ (what the tests ran) and writes the version and commit into it.
// 2. Lays the package out in release/package/: the files package.json names, the manifest
//    without `prepare` (it runs `npm run build`, which needs typescript, a dev dependency
//    absent from an installed package: the tarball ships dist/ built) and without
//    `workspaces` (the emulator, packages/emulator, is not released: issue 27.1; the lock is
//    pruned to what the daemon package reaches, so its closure stays out too), and
//    npm-shrinkwrap.json made from package-lock.json by `npm shrinkwrap`, so that
//    `npm install -g ./dssync-X.Y.Z.tgz` installs exactly the production versions the tests
//    ran (a global install ignores package-lock.json and the root's `overrides`, and
//    resolved newer ones: EBADENGINE cookie@2.0.2 requires node >=22).
// 3. Ships what an operator needs and nothing else: no development script, no `demo/` (the
//    demo needs the emulator, which is not released), with CHANGELOG.md, LICENSE and
//    THIRD-PARTY-NOTICES.md: the licence of every bundled package, read from the production
//    tree installed here (its `license` field and its licence file).
// 4. `npm pack` there, into release/.
// Flags: --no-build (dist/ is already built), --offline (npm ci from the cache alone), --out DIR.
// The checkout itself is left as it was: package-lock.json stays, no shrinkwrap is written.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
// --out DIR: elsewhere than release/ (the release test writes into a temporary folder).
const outAt = process.argv.indexOf('--out');
const out = outAt > 0 && process.argv[outAt + 1] ? resolve(process.argv[outAt + 1]) : join(root, 'release');
const stage = join(out, 'package');
const NOTICES = 'THIRD-PARTY-NOTICES.md';
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, stdio: ['ignore', 'inherit', 'inherit'] });

if (!process.argv.includes('--no-build')) run(npm, ['run', 'build'], root);
if (!existsSync(join(root, 'dist/src/build-info.json'))) throw new Error('dist/src/build-info.json is missing: run npm run build');

const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
rmSync(stage, { recursive: true, force: true });
mkdirSync(stage, { recursive: true });
const DOCS = ['README.md', 'CHANGELOG.md', 'LICENSE'];
for (const f of [...pkg.files, ...DOCS]) {
  if (existsSync(join(root, f))) cpSync(join(root, f), join(stage, f), { recursive: true });
}
// The installed package builds nothing and runs no development script.
delete pkg.scripts;
// The daemon package only: the emulator workspace and what only it needs stay behind.
delete pkg.workspaces;
// npm pack (npm 10+) leaves npm-shrinkwrap.json out unless `files` names it.
pkg.files = [...pkg.files, 'npm-shrinkwrap.json', ...DOCS, NOTICES];
writeFileSync(join(stage, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
writeFileSync(join(stage, 'package-lock.json'), `${JSON.stringify(daemonOnlyLock(JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'))), null, 2)}\n`);
// npm shrinkwrap: package-lock.json becomes npm-shrinkwrap.json, the lock a package ships.
run(npm, ['shrinkwrap', '--ignore-scripts'], stage);
if (!existsSync(join(stage, 'npm-shrinkwrap.json'))) throw new Error('npm shrinkwrap wrote no npm-shrinkwrap.json');

// The production tree, installed from that lock exactly as `npm ci` does, and bundled into
// the tarball: npm honours a package's shrinkwrap for a local install but not for a global
// install of a tarball (npm/cli#5325: it resolved afresh), so the tarball carries its
// node_modules and `npm install -g` resolves nothing (and needs no registry).
run(npm, ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', ...(process.argv.includes('--offline') ? ['--offline'] : [])], stage);
pkg.bundleDependencies = true;
writeFileSync(join(stage, 'package.json'), `${JSON.stringify(pkg, null, 2)}\n`);
writeFileSync(join(stage, NOTICES), thirdPartyNotices(join(stage, 'node_modules')));

/**
 * THIRD-PARTY-NOTICES.md: each bundled package (name and version, once), its licence as its
 * package.json declares it, and the text of its licence file when it ships one.
 */
function thirdPartyNotices(nodeModules) {
  const found = new Map();
  const visit = (dir) => {
    if (!existsSync(dir)) return;
    for (const entry of readdirSync(dir)) {
      if (entry.startsWith('.')) continue;
      const names = entry.startsWith('@') ? readdirSync(join(dir, entry)).map((n) => `${entry}/${n}`) : [entry];
      for (const name of names) {
        const at = join(dir, name);
        const manifest = join(at, 'package.json');
        if (existsSync(manifest)) {
          const p = JSON.parse(readFileSync(manifest, 'utf8'));
          const key = `${p.name}@${p.version}`;
          if (!found.has(key)) {
            const file = readdirSync(at).find((f) => /^(licen[cs]e|copying)(\.|-|$)/i.test(f));
            const license = typeof p.license === 'string' ? p.license : (p.license?.type ?? (p.licenses ?? []).map((l) => l.type ?? l).join(' OR ')) || 'UNKNOWN';
            found.set(key, { license, text: file ? readFileSync(join(at, file), 'utf8').trim() : undefined });
          }
        }
        visit(join(at, 'node_modules'));
      }
    }
  };
  visit(nodeModules);
  const sections = [...found.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([key, { license, text }]) =>
    `## ${key}\n\nLicence: ${license}\n\n${text ? `\`\`\`\n${text}\n\`\`\`` : '(the package ships no licence file)'}\n`);
  return `# Third-party notices\n\nThe release of ${pkg.name} ${pkg.version} bundles these ${found.size} packages (its production dependencies).\n\n${sections.join('\n')}`;
}

/**
 * The lock without the workspaces: only the packages the root package reaches (its
 * dependencies of every kind, followed as Node resolves them: the nearest node_modules up
 * the tree), so `npm ci` in the stage installs neither the emulator nor its closure
 * (fastify, mammoth, pdfjs-dist and pdfjs-dist's native canvas). Versions are not touched.
 */
function daemonOnlyLock(lock) {
  if (lock.lockfileVersion < 2 || !lock.packages) throw new Error('package-lock.json must be lockfileVersion 2 or 3');
  const packages = lock.packages;
  const rootEntry = { ...packages[''] };
  delete rootEntry.workspaces;
  const kept = new Set(['']);
  const queue = [''];
  const resolve = (from, name) => {
    for (let at = from; ; at = at.includes('/node_modules/') ? at.slice(0, at.lastIndexOf('/node_modules/')) : '') {
      const key = at === '' ? `node_modules/${name}` : `${at}/node_modules/${name}`;
      if (packages[key]) return key;
      if (at === '') return undefined;
    }
  };
  while (queue.length > 0) {
    const at = queue.shift();
    const entry = at === '' ? rootEntry : packages[at];
    const deps = { ...entry.dependencies, ...entry.devDependencies, ...entry.optionalDependencies, ...entry.peerDependencies };
    for (const name of Object.keys(deps)) {
      const key = resolve(at, name);
      if (key === undefined || kept.has(key)) continue;
      if (packages[key].link) throw new Error(`the daemon package depends on the workspace ${name}: it must not (issue 27.1)`);
      kept.add(key);
      queue.push(key);
    }
  }
  return { ...lock, packages: Object.fromEntries(Object.entries(packages).filter(([k]) => kept.has(k)).map(([k, v]) => [k, k === '' ? rootEntry : v])) };
}

const tgz = join(out, `${pkg.name}-${pkg.version}.tgz`);
rmSync(tgz, { force: true });
run(npm, ['pack', '--ignore-scripts', '--pack-destination', out], stage);
if (!existsSync(tgz)) throw new Error(`npm pack wrote no ${tgz}`);
process.stdout.write(`release: ${tgz}\n`);
