// After tsc: make the CLI entry point executable so `npx dssync` and the systemd units can run
// it directly, and copy the status page's files (and uPlot's browser build, vendored: the page
// loads nothing from elsewhere) next to the compiled web module.
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const bin = join(root, 'dist/src/cli/main.js');
if (existsSync(bin)) chmodSync(bin, 0o755);

// The emulator is its own package now (packages/emulator, built into its own dist/): a
// dist/src/emulator left by a build from before the split would otherwise be released.
rmSync(join(root, 'dist/src/emulator'), { recursive: true, force: true });

const src = join(root, 'src/daemon/status/web');
const out = join(root, 'dist/src/daemon/status/web');
mkdirSync(join(out, 'vendor'), { recursive: true });
for (const f of readdirSync(src)) if (/\.(html|js|css|svg)$/.test(f)) copyFileSync(join(src, f), join(out, f));
const uplot = join(dirname(createRequire(import.meta.url).resolve('uplot/package.json')), 'dist');
for (const f of ['uPlot.iife.min.js', 'uPlot.min.css']) copyFileSync(join(uplot, f), join(out, 'vendor', f));

// What `dssync --version` prints (src/cli/version.ts): the version and the commit of this
// build. An installed tarball has no checkout to ask, so it is written down now; a tree
// with uncommitted changes says so ("-dirty"), and one outside git says "unknown".
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
function gitCommit() {
  try {
    const git = (...args) => execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const commit = git('rev-parse', '--short=12', 'HEAD');
    return git('status', '--porcelain', '--untracked-files=no') === '' ? commit : `${commit}-dirty`;
  } catch {
    return 'unknown';
  }
}
writeFileSync(join(root, 'dist/src/build-info.json'), `${JSON.stringify({ version: pkg.version, commit: process.env.DSSYNC_COMMIT || gitCommit() })}\n`);
