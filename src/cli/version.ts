/**
 * What `dssync --version` prints: the package's version and the commit it was built from.
 * Both come from dist/src/build-info.json, written by scripts/postbuild.mjs at build time
 * (an installed tarball has no git checkout to ask). Run from the sources (tests, tsx) the
 * file is absent and the line says so rather than guessing.
 */
import { readFileSync } from 'node:fs';

export interface BuildInfo {
  version: string;
  commit: string;
}

/** dist/src/build-info.json, beside the compiled src/ folder. */
const BUILD_INFO = new URL('../build-info.json', import.meta.url);

export function readBuildInfo(): BuildInfo | undefined {
  try {
    const raw = JSON.parse(readFileSync(BUILD_INFO, 'utf8')) as Partial<BuildInfo>;
    if (typeof raw.version !== 'string' || typeof raw.commit !== 'string') return undefined;
    return { version: raw.version, commit: raw.commit };
  } catch {
    return undefined;
  }
}

/** `0.3.0 (commit 65772e3)`; `unknown (not built: run npm run build)` from the sources. */
export function versionLine(info = readBuildInfo()): string {
  return info ? `${info.version} (commit ${info.commit})` : 'unknown (not built: run npm run build)';
}
