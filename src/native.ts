/**
 * dssync's own native modules (native/*.c, built by scripts/build-native.mjs into
 * dist/src/native/NAME.node), or why one cannot be: every caller has a way without it
 * (docs/watch.md, "The watch itself"; docs/performance.md, "Session 29"). `DSSYNC_NATIVE=0`
 * turns them all off (docs/config.md): fs.watch, the watchdog's worker, no malloc trim.
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

export type NativeModuleName = 'inotify' | 'list-folder' | 'malloc-trim' | 'watchdog';

/** Where a built module is, from this file's place in src/ (tests) or dist/src/. */
function modulePath(name: NativeModuleName): string {
  const here = import.meta.url;
  return fileURLToPath(here.endsWith('.ts') ? new URL(`../dist/src/native/${name}.node`, here) : new URL(`./native/${name}.node`, here));
}

/** The module's exports, or why not (turned off, not Linux, not built, not loadable here). */
export function loadNativeModule<T>(name: NativeModuleName, env: NodeJS.ProcessEnv = process.env): { module: T } | { why: string } {
  if (env.DSSYNC_NATIVE === '0') return { why: 'DSSYNC_NATIVE=0' };
  if (process.platform !== 'linux') return { why: `dssync's native modules are built for Linux (this is ${process.platform})` };
  const path = modulePath(name);
  try {
    return { module: createRequire(import.meta.url)(path) as T };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'MODULE_NOT_FOUND') return { why: `${path} is not built (npm run build needs a C compiler: cc)` };
    return { why: `${path} could not be loaded: ${e.message}` };
  }
}
