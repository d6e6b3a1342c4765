/** dssync's version, for the User-Agent header. */
import { readFileSync } from 'node:fs';

function readVersion(): string {
  // src/api/ when run from source, dist/src/api/ when built: package.json is 2 or 3 levels up.
  for (const rel of ['../../package.json', '../../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(rel, import.meta.url), 'utf8')) as { name?: unknown; version?: unknown };
      if (pkg.name === 'dssync' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // try the next candidate
    }
  }
  return '0.0.0';
}

export const DSSYNC_VERSION = readVersion();
export const DEFAULT_USER_AGENT = `dssync/${DSSYNC_VERSION}`;
