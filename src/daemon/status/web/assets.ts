/**
 * The status page's files, read once when the endpoint starts and served from memory. They
 * sit next to this module: src/daemon/status/web/ in the sources, dist/src/daemon/status/web/ once built
 * (scripts/postbuild.mjs copies them there, with uPlot's browser build under vendor/). From
 * the sources (tests), uPlot is read from node_modules. Nothing is fetched from elsewhere.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Asset {
  type: string;
  body: Buffer;
}

const HERE = dirname(fileURLToPath(import.meta.url));

/** URL path -> [file next to this module (or under vendor/), content type]. */
const FILES: Record<string, [string, string]> = {
  '/': ['index.html', 'text/html; charset=utf-8'],
  '/app.js': ['app.js', 'text/javascript; charset=utf-8'],
  '/style.css': ['style.css', 'text/css; charset=utf-8'],
  '/vendor/uPlot.iife.min.js': ['vendor/uPlot.iife.min.js', 'text/javascript; charset=utf-8'],
  '/vendor/uPlot.min.css': ['vendor/uPlot.min.css', 'text/css; charset=utf-8'],
};

export function loadAssets(dir = HERE): Map<string, Asset> {
  const out = new Map<string, Asset>();
  for (const [url, [file, type]] of Object.entries(FILES)) out.set(url, { type, body: readFileSync(locate(dir, file)) });
  return out;
}

function locate(dir: string, file: string): string {
  const local = join(dir, file);
  if (existsSync(local) || !file.startsWith('vendor/')) return local;
  // Running from the sources: the vendored copy is made by the build only.
  const uplot = dirname(createRequire(import.meta.url).resolve('uplot/package.json'));
  return join(uplot, 'dist', file.slice('vendor/'.length));
}
