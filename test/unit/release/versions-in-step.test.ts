/**
 * One version, written in several files: the two packages' manifests and the lock, the
 * CHANGELOG's newest release, the container build and the Kubernetes example, and the
 * install commands of the README and systemd/README.md. The emulator's package is not
 * released, but it is built and tested with the daemon from the same checkout: one number
 * says which emulator a test or a demo ran against (issue 26).
 * `npm version X.Y.Z --workspaces --include-workspace-root --no-git-tag-version` moves the
 * manifests and the lock together; this test names whatever else was forgotten.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FORMAT_RELEASES, STATE_VERSION } from '../../../src/state/schema.js';

const ROOT = join(import.meta.dirname, '../../..');
const read = (p: string): string => readFileSync(join(ROOT, p), 'utf8');
const version = (JSON.parse(read('package.json')) as { version: string }).version;

describe('the release version is the same everywhere', () => {
  it('is a release number', () => {
    expect(version).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('in the emulator package and the lock', () => {
    const lock = JSON.parse(read('package-lock.json')) as { version: string; packages: Record<string, { version?: string }> };
    expect({
      emulator: (JSON.parse(read('packages/emulator/package.json')) as { version: string }).version,
      lock: lock.version,
      lockRoot: lock.packages['']?.version,
      lockEmulator: lock.packages['packages/emulator']?.version,
    }).toEqual({ emulator: version, lock: version, lockRoot: version, lockEmulator: version });
  });

  it("as the CHANGELOG's newest release", () => {
    expect(/^## \[(\d+\.\d+\.\d+)\]/m.exec(read('CHANGELOG.md'))?.[1]).toBe(version);
  });

  it('in the container build, the Kubernetes example and the install commands', () => {
    const stale = (file: string, pattern: RegExp): string[] =>
      [...read(file).matchAll(pattern)].map((m) => m[1] as string).filter((v) => v !== version).map((v) => `${file}: ${v}`);
    expect([
      ...stale('deploy/container/Containerfile', /VERSION=(\d+\.\d+\.\d+)/g),
      ...stale('deploy/kubernetes/statefulset.yaml', /dssync:(\d+\.\d+\.\d+)/g),
      ...stale('README.md', /dssync-(\d+\.\d+\.\d+)\.tgz/g),
      ...stale('systemd/README.md', /dssync-(\d+\.\d+\.\d+)\.tgz/g),
    ]).toEqual([]);
  });

  it('is at least the release that introduced the state format it writes', () => {
    const needs = FORMAT_RELEASES[STATE_VERSION] as string;
    const n = (v: string): number[] => v.split('.').map(Number);
    const [a, b] = [n(version), n(needs)];
    expect(a[0]! * 1e6 + a[1]! * 1e3 + a[2]!).toBeGreaterThanOrEqual(b[0]! * 1e6 + b[1]! * 1e3 + b[2]!);
  });
});
