/** Coverage's rules (src/engine/coverage.ts): each file counted once, under its reason. */
import { expect, it } from 'vitest';
import { coverageOf, totalOf, type CoverageInput } from '../../../src/engine/coverage.js';

const input = (o: Partial<CoverageInput>): CoverageInput => ({
  files: [],
  included: () => true,
  formats: undefined,
  maxFileBytes: 1000,
  sent: () => true,
  refused: () => undefined,
  textLayer: () => undefined,
  ...o,
});

it('sorts each file under one reason, per extension', () => {
  const files = ['a.pdf', 'scan.PDF', 'b.pptx', 'c.pptx', 'old.xls', 'x.bin', 'mail.eml', 'big.txt', 'todo.md', 'noext'].map((path) => ({ path, size: path === 'big.txt' ? 5000 : 10 }));
  const rows = coverageOf(
    input({
      files,
      included: (p) => !['old.xls', 'x.bin', 'mail.eml'].includes(p),
      formats: { '.eml': 'skip' },
      sent: (p) => p !== 'todo.md',
      refused: (p) => (p === 'c.pptx' ? 'sales/c.pptx: not converted to Markdown: not a readable zip container' : p === 'noext' ? 'HTTP 415: unsupported media type' : undefined),
      textLayer: (p) => (p === 'scan.PDF' ? 'no-text' : 'text'),
    }),
  );
  const by = Object.fromEntries(rows.map((r) => [r.extension, r]));
  expect(by['.pdf']).toMatchObject({ asIs: 2, noText: 1, unchecked: 0 });
  expect(by['.pptx']).toMatchObject({ converted: 1, failed: { conversion: 1, refused: 0 } });
  expect(by['.xls']?.skipped).toEqual({ policy: 0, tooBig: 0, unsupported: 1 });
  expect(by['.bin']?.skipped).toEqual({ policy: 0, tooBig: 0, unsupported: 1 });
  expect(by['.eml']?.skipped).toEqual({ policy: 1, tooBig: 0, unsupported: 0 });
  expect(by['.txt']?.skipped).toEqual({ policy: 0, tooBig: 1, unsupported: 0 });
  expect(by['.md']).toMatchObject({ pending: 1, asIs: 0 });
  expect(by['']?.failed).toEqual({ conversion: 0, refused: 1 });
  expect(rows.map((r) => r.extension)).toEqual(['', '.bin', '.eml', '.md', '.pdf', '.pptx', '.txt', '.xls']);
  const t = totalOf(rows);
  const counted = t.asIs + t.converted + t.skipped.policy + t.skipped.tooBig + t.skipped.unsupported + t.failed.conversion + t.failed.refused + t.pending;
  expect(counted).toBe(files.length);
});

it('a file the mapping sends as it is is not converted, whatever its default', () => {
  const rows = coverageOf(input({ files: [{ path: 'l.csv', size: 1 }], formats: { '.csv': 'as-is' } }));
  expect(rows[0]).toMatchObject({ extension: '.csv', asIs: 1, converted: 0 });
});
