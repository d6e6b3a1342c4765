/**
 * docs/config.md and config.example.json repeat what the schema and DEFAULTS say; this test
 * ties them to the code (issue 27.8), so a new key, a changed default or a new environment
 * variable cannot land without its documentation. The meaning column stays prose written
 * for operators (CONTRIBUTING.md says why it is not generated); the key names, the defaults
 * and the example's values are checked here against the schema walk (KNOWN_KEYS, src/config/schema-keys.ts).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULTS, KNOWN_KEYS } from '../../../src/config/schema.js';
import { loadConfig } from '../../../src/config/load.js';

const ROOT = join(import.meta.dirname, '../../..');
const DOC = readFileSync(join(ROOT, 'docs/config.md'), 'utf8');
const EXAMPLE_FILE = join(ROOT, 'config.example.json');
const EXAMPLE = JSON.parse(readFileSync(EXAMPLE_FILE, 'utf8')) as Record<string, unknown>;

/** Keys documented elsewhere on purpose: `$schema` is for editors and ignored by dssync. */
const UNDOCUMENTED = new Set(['$schema']);

/** The rows of the table under a `## heading`: key → its cells. */
function tableRows(heading: string): Map<string, string[]> {
  const start = DOC.indexOf(`\n## ${heading}`);
  expect(start, `docs/config.md has a "## ${heading}" section`).toBeGreaterThan(0);
  const end = DOC.indexOf('\n## ', start + 1);
  const rows = new Map<string, string[]>();
  for (const line of DOC.slice(start, end < 0 ? undefined : end).split('\n')) {
    const m = /^\| `([^`]+)` \|/.exec(line);
    if (m) rows.set(m[1] as string, line.split(' | ').map((c) => c.replace(/^\| |\|$/g, '').trim()));
  }
  return rows;
}

/** Every documented key by its full path (`mappings[].path` for the mapping table's `path`). */
const documented = new Map<string, string[]>([
  ...tableRows('Top-level keys'),
  ...[...tableRows('Mapping keys')].map(([k, cells]) => [`mappings[].${k}`, cells] as [string, string[]]),
]);

/** Every key of the file by its path, objects included (`queue`, `queue.concurrency`, `mappings[].path`...). */
const keyPaths = Object.entries(KNOWN_KEYS).flatMap(([path, keys]) => keys.map((k) => (path === '' ? k : `${path}.${k}`)));
const schemaPaths = keyPaths.filter((p) => !UNDOCUMENTED.has(p.split('.')[0] as string));
/** The keys that hold a value, not an object of keys (`queue.concurrency`, not `queue`). */
const leafPaths = schemaPaths.filter((p) => !schemaPaths.some((q) => q.startsWith(`${p}.`) || q.startsWith(`${p}[].`)));

/** The default DEFAULTS gives a key path, if it gives one. */
function defaultOf(path: string): unknown {
  const parts = path === 'status.listen' ? ['statusListen'] : path.replace(/^mappings\[\]\./, 'mapping.').split('.');
  let v: unknown = DEFAULTS;
  for (const p of parts) {
    if (typeof v !== 'object' || v === null || !(p in v)) return undefined;
    v = (v as Record<string, unknown>)[p];
  }
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? undefined : v;
}

/** The values written as code in a cell (`32`, `"info"`, `[]`), parsed. */
function codeValues(cell: string): unknown[] {
  return [...cell.matchAll(/`([^`]+)`/g)].flatMap((m) => {
    try {
      return [JSON.parse(m[1] as string)];
    } catch {
      return [];
    }
  });
}

describe('docs/config.md against the schema', () => {
  it('has a row for every key of the config file (or for the object that holds it)', () => {
    const missing = leafPaths.filter((p) => {
      const parts = p.split('.');
      return !parts.some((_, i) => documented.has(parts.slice(0, i + 1).join('.')));
    });
    expect(missing).toEqual([]);
  });

  it('documents no key the schema does not have', () => {
    const known = new Set(schemaPaths);
    expect([...documented.keys()].filter((k) => !known.has(k))).toEqual([]);
  });

  it('shows each key default as DEFAULTS holds it', () => {
    const wrong: string[] = [];
    for (const [path, cells] of documented) {
      const value = defaultOf(path);
      if (value === undefined) continue;
      const shown = codeValues(cells[2] ?? '');
      if (!shown.some((v) => JSON.stringify(v) === JSON.stringify(value))) wrong.push(`${path}: docs say ${cells[2]}, DEFAULTS ${JSON.stringify(value)}`);
    }
    expect(wrong).toEqual([]);
  });

  it('lists every environment variable the code reads', () => {
    const read = new Set<string>();
    const walk = (dir: string): void => {
      for (const name of readdirSync(dir)) {
        const p = join(dir, name);
        if (statSync(p).isDirectory()) walk(p);
        else if (p.endsWith('.ts')) {
          const text = readFileSync(p, 'utf8');
          for (const m of text.matchAll(/env(?:\.|\[')(DSSYNC_[A-Z_]+)|secretSource\('(DSSYNC_[A-Z_]+)'/g)) read.add((m[1] ?? m[2]) as string);
        }
      }
    };
    walk(join(ROOT, 'src'));
    expect(read.size).toBeGreaterThan(10);
    const table = tableRows('Environment variables');
    expect([...read].filter((v) => !table.has(v)).sort()).toEqual([]);
  });
});

describe('config.example.json', () => {
  it('is a valid config file', () => {
    // DSSYNC_TOKEN wins over the example's tokenFile, which does not exist here.
    expect(() => loadConfig({ file: EXAMPLE_FILE, env: { DSSYNC_TOKEN: 'example-token' } })).not.toThrow();
  });

  it('shows every option that has a default, with that default, in its first mapping', () => {
    const mapping = (EXAMPLE.mappings as Array<Record<string, unknown>>)[0] as Record<string, unknown>;
    const wrong: string[] = [];
    for (const path of schemaPaths) {
      const value = defaultOf(path);
      // A file holds one auth type; docs/auth.md shows each (the example's is "static").
      if (value === undefined || path.startsWith('auth.')) continue;
      const [holder, parts] = path.startsWith('mappings[].') ? [mapping, path.slice('mappings[].'.length).split('.')] : [EXAMPLE, path.split('.')];
      let v: unknown = holder;
      for (const p of parts) v = typeof v === 'object' && v !== null ? (v as Record<string, unknown>)[p] : undefined;
      if (JSON.stringify(v) !== JSON.stringify(value)) wrong.push(`${path}: example ${JSON.stringify(v)}, DEFAULTS ${JSON.stringify(value)}`);
    }
    expect(wrong).toEqual([]);
  });

  it('names every top-level key but the pinned installation id (copied to two hosts it would make them one owner)', () => {
    const top = keyPaths.filter((p) => !p.includes('.') && !p.includes('[]'));
    expect(top.filter((k) => !(k in EXAMPLE) && k !== '$schema' && k !== 'installationId')).toEqual([]);
    expect('installationId' in EXAMPLE).toBe(false);
  });
});
