import { describe, expect, it } from 'vitest';
import { DEFAULT_INCLUDE } from '../../../src/config/schema.js';
import picomatch from 'picomatch';
import { createFilter, loadFilter, IgnoreFileError, TEMPORARY_NAME_GLOBS, type ExcludeReason } from '../../../src/local/filters.js';
import type { LocalFs } from '../../../src/local/fs.js';

const defaults = { include: DEFAULT_INCLUDE, exclude: [], ignoreFile: '.dssyncignore' };

describe('default filter (default includes, built-in excludes)', () => {
  const filter = createFilter(defaults);
  const cases: [string, boolean, ExcludeReason | undefined][] = [
    // the service's types, extensions in any case
    ['notes.txt', false, undefined],
    ['a/b/c/Report.PDF', false, undefined],
    ['Handbook.DocX', false, undefined],
    ['x.md', false, undefined],
    ['x.odt', false, undefined],
    ['x.rtf', false, undefined],
    ['x.html', false, undefined],
    ['x.htm', false, undefined],
    ['data.csv', false, undefined],
    ['old.doc', false, undefined],
    ['Réunion d’équipe – procès-verbal.txt', false, undefined],
    ['name with spaces & #hash% .txt', false, undefined],
    // other types
    ['photo.jpg', false, 'not-included'],
    ['archive.zip', false, 'not-included'],
    ['README', false, 'not-included'],
    ['pdf', false, 'not-included'],
    // hidden files and folders, at any depth
    ['.env.txt', false, 'hidden'],
    ['.git', true, 'hidden'],
    ['.git/config.txt', false, 'hidden'],
    ['a/.cache/b/notes.txt', false, 'hidden'],
    ['.DS_Store', false, 'hidden'],
    ['.dssyncignore', false, 'hidden'],
    // office lock / temp files
    ['~$handbook.docx', false, 'temporary'],
    ['sub/.~lock.handbook.odt#', false, 'hidden'],
    ['~WRL0001.tmp', false, 'temporary'],
    // editor swap / backup files
    ['notes.txt.swp', false, 'temporary'],
    ['notes.txt.swx', false, 'temporary'],
    ['notes.txt~', false, 'temporary'],
    ['#notes.txt#', false, 'temporary'],
    ['4913', false, 'temporary'],
    ['a/4913', false, 'temporary'],
    // OS litter
    ['Thumbs.db', false, 'system'],
    ['sub/thumbs.db', false, 'system'],
    ['desktop.ini', false, 'system'],
    ['$RECYCLE.BIN', true, 'system'],
    ['$RECYCLE.BIN/x.txt', false, 'system'],
    ['System Volume Information/x.txt', false, 'system'],
    // folders are walked whatever their name (includes apply to files only)
    ['sub', true, undefined],
    ['sub.pdf', true, undefined],
    ['a/b', true, undefined],
  ];
  it.each(cases)('%s (dir: %s) -> %s', (path, isDir, reason) => {
    expect(filter.reason(path, isDir)).toBe(reason);
    expect(filter.includes(path, isDir)).toBe(reason === undefined);
  });

  it('checks the entry alone with includesEntry (its parent already walked)', () => {
    expect(filter.includesEntry('.git/notes.txt', false)).toBe(true);
    expect(filter.includes('.git/notes.txt', false)).toBe(false);
  });

  it('treats NFD and "./" spellings like their normal form', () => {
    expect(filter.includes('./sub//R\u0065\u0301union.txt', false)).toBe(true);
  });
});

describe('mapping include / exclude globs', () => {
  const filter = createFilter({
    include: ['**/*.pdf', 'notes/*.md'],
    exclude: ['**/drafts/**', '*.tmp.pdf', '/archive', 'private/', 'Secret*'],
  });
  const cases: [string, boolean, ExcludeReason | undefined][] = [
    ['a.pdf', false, undefined],
    ['x/y/A.PDF', false, undefined],
    ['notes/n.md', false, undefined],
    ['other/n.md', false, 'not-included'],
    ['n.txt', false, 'not-included'],
    ['drafts', true, 'exclude'],
    ['x/drafts', true, 'exclude'],
    ['x/drafts/a.pdf', false, 'exclude'],
    ['x/report.tmp.pdf', false, 'exclude'],
    ['archive', true, 'exclude'],
    ['archive/a.pdf', false, 'exclude'],
    ['x/archive/a.pdf', false, undefined],
    ['private', true, 'exclude'],
    ['private/a.pdf', false, 'exclude'],
    ['private.pdf', false, undefined],
    ['deep/secret-plans.pdf', false, 'exclude'],
    ['SECRETS', true, 'exclude'],
  ];
  it.each(cases)('%s (dir: %s) -> %s', (path, isDir, reason) => {
    expect(filter.reason(path, isDir)).toBe(reason);
  });
});

describe("globs are matched as picomatch's own matcher matches them", () => {
  it('gives the same answer for every name, the special characters of globs among them', () => {
    const globs = ['**/*.{txt,md,pdf}', '**/drafts/**', '**/[ab]*.x', '**/!(keep)*.tmp', '**/@(foo|bar).md', '**/a?c', 'top/*.csv'];
    // And a folder glob ("b*/": folders only), and a glob of names without "**/" ("*.TMP").
    const spec = { include: globs.slice(0, 1), exclude: [...globs.slice(1), 'b*/', '*.TMP'], ignoreFile: undefined };
    const filter = createFilter(spec);
    const include = picomatch([...globs.slice(0, 1)], { dot: true, nocase: true });
    const exclude = picomatch([...globs.slice(1), '**/*.TMP'], { dot: true, nocase: true });
    const folderExclude = picomatch(['**/b*'], { dot: true, nocase: true });
    const temporary = picomatch([...TEMPORARY_NAME_GLOBS], { dot: true, nocase: true });
    const parts = ['a', 'B', 'c', 'x', 'foo', 'bar', 'keep', 'drafts', 'top', '~', '$', '#', '4913', '.tmp', '.TXT', '.md', '.pdf', '.swp', '~$', '!', '(', ')', '[', ']', '*', '?', '{', '}', ' ', 'é', '-'];
    let seed = 7;
    const rnd = (n: number): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    let compared = 0;
    for (let i = 0; i < 20_000; i++) {
      const name = Array.from({ length: 1 + rnd(5) }, () => parts[rnd(parts.length)]).join('');
      if (name.startsWith('.') || name.includes('/')) continue;
      const rel = rnd(2) === 0 ? name : `${['top', 'drafts', 'a/b'][rnd(3)]}/${name}`;
      if (['thumbs.db', 'desktop.ini'].includes(name.toLowerCase())) continue;
      const file = !temporary(name) && !exclude(rel) && include(rel);
      const folder = !temporary(name) && !exclude(rel) && !exclude(`${rel}/`) && !folderExclude(rel);
      expect([rel, filter.includesEntry(rel, false), filter.includesEntry(rel, true)]).toEqual([rel, file, folder]);
      compared++;
    }
    expect(compared).toBeGreaterThan(15_000);
  });
});

describe('ignore file (gitignore syntax)', () => {
  const text = ['# comment', 'build/', '*.log.txt', '!keep.log.txt', '/top.txt', 'docs/**/old-*.md', ''].join('\n');
  const filter = createFilter(defaults, text);
  const cases: [string, boolean, ExcludeReason | undefined][] = [
    ['build', true, 'ignore-file'],
    ['x/build', true, 'ignore-file'],
    ['x/build/a.txt', false, 'ignore-file'],
    ['build.txt', false, undefined],
    ['app.log.txt', false, 'ignore-file'],
    ['keep.log.txt', false, undefined],
    ['top.txt', false, 'ignore-file'],
    ['sub/top.txt', false, undefined],
    ['docs/a/b/old-plan.md', false, 'ignore-file'],
    ['docs/a/b/new-plan.md', false, undefined],
    ['# comment', false, 'not-included'],
  ];
  it.each(cases)('%s (dir: %s) -> %s', (path, isDir, reason) => {
    expect(filter.reason(path, isDir)).toBe(reason);
  });

  it('never mirrors a visible ignore file itself', () => {
    const f = createFilter({ include: ['**/*.txt'], exclude: [], ignoreFile: 'ignore.txt' }, 'x.txt');
    expect(f.reason('ignore.txt', false)).toBe('ignore-file');
    expect(f.reason('x.txt', false)).toBe('ignore-file');
    expect(f.reason('sub/ignore.txt', false)).toBeUndefined();
  });
});

describe('loadFilter', () => {
  const fakeFs = (readFile: LocalFs['readFile']): LocalFs =>
    ({ readFile }) as Partial<LocalFs> as LocalFs;
  const mapping = { ...defaults, path: '/srv/share' };

  it('reads the ignore file at the mapped folder root', async () => {
    const seen: string[] = [];
    const f = await loadFilter(mapping, fakeFs(async (p) => (seen.push(p), 'secret/\n')));
    expect(seen).toEqual(['/srv/share/.dssyncignore']);
    expect(f.includes('secret/a.txt', false)).toBe(false);
  });

  it('works without an ignore file', async () => {
    const f = await loadFilter(mapping, fakeFs(async () => Promise.reject(Object.assign(new Error('x'), { code: 'ENOENT' }))));
    expect(f.includes('secret/a.txt', false)).toBe(true);
  });

  it('refuses to filter without an ignore file it cannot read', async () => {
    const err = await loadFilter(mapping, fakeFs(async () => Promise.reject(Object.assign(new Error('x'), { code: 'EACCES' })))).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IgnoreFileError);
    expect((err as Error).message).toBe('cannot read the ignore file /srv/share/.dssyncignore: permission denied (EACCES)');
  });
});
