// After tsc: make the CLI entry point executable so `npx dssync` and the systemd units can run
// it directly, and copy the status page's files (and uPlot's browser build, vendored: the page
// loads nothing from elsewhere) next to the compiled web module.
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const bin = join(root, 'dist/src/cli/main.js');
if (existsSync(bin)) chmodSync(bin, 0o755);

const src = join(root, 'src/daemon/web');
const out = join(root, 'dist/src/daemon/web');
mkdirSync(join(out, 'vendor'), { recursive: true });
for (const f of readdirSync(src)) if (/\.(html|js|css|svg)$/.test(f)) copyFileSync(join(src, f), join(out, f));
const uplot = join(dirname(createRequire(import.meta.url).resolve('uplot/package.json')), 'dist');
for (const f of ['uPlot.iife.min.js', 'uPlot.min.css']) copyFileSync(join(uplot, f), join(out, 'vendor', f));
