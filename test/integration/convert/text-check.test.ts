/**
 * Scanned PDFs named (src/daemon/mapping/text-check.ts, the built worker: npm run build): PDFs sent
 * as they are, read from a real folder and checked in a conversion worker; a scan is a
 * `no-text` problem, a damaged PDF an `unchecked` one, a text PDF nothing.
 */
import { copyFileSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ProblemList } from '../../../src/daemon/mapping/problem-list.js';
import { NO_TEXT_REASON, TextChecks } from '../../../src/daemon/mapping/text-check.js';

const fixture = (f: string): string => new URL(`../../fixtures/${f}`, import.meta.url).pathname;

describe('TextChecks', () => {
  let root: string;
  let problems: ProblemList;
  let changed: number;
  let checks: TextChecks;
  const kinds = (): Record<string, string> => Object.fromEntries(problems.data().problems.map((p) => [p.path, `${p.kind}: ${p.reason}`]));

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'dssync-text-'));
    copyFileSync(fixture('office/policies/scanned-contract.pdf'), join(root, 'scan.pdf'));
    copyFileSync(fixture('office/policies/memo.pdf'), join(root, 'memo.pdf'));
    copyFileSync(fixture('handbook.pdf'), join(root, 'handbook.PDF'));
    copyFileSync(fixture('truncated.pdf'), join(root, 'broken.pdf'));
    problems = new ProblemList(() => 0);
    changed = 0;
    checks = new TextChecks({ mapping: { path: root, formats: {}, followSymlinks: false }, problems, onChanged: () => changed++, isStopped: () => false });
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('names the scan and the damaged PDF; text PDFs and other operations add nothing', async () => {
    await Promise.all(['scan.pdf', 'memo.pdf', 'handbook.PDF', 'broken.pdf'].map((p) => checks.afterOp('upload', p)));
    await checks.afterOp('delete', 'gone.pdf');
    expect(kinds()).toEqual({ 'scan.pdf': `no-text: ${NO_TEXT_REASON}`, 'broken.pdf': expect.stringMatching(/^unchecked: the PDF could not be checked: .*%%EOF/) });
    expect(changed).toBe(2);
  });

  it('a check overtaken by a later operation on the file is dropped', async () => {
    const pending = checks.afterOp('replace', 'scan.pdf');
    await checks.afterOp('delete', 'scan.pdf');
    await pending;
    expect(kinds()).toEqual({});
  });

  it('a PDF the mapping converts or skips, a link and a file gone are not checked', async () => {
    symlinkSync(join(root, 'scan.pdf'), join(root, 'link.pdf'));
    checks = new TextChecks({ mapping: { path: root, formats: { '.pdf': 'skip' }, followSymlinks: false }, problems, onChanged: () => changed++, isStopped: () => false });
    await checks.afterOp('upload', 'scan.pdf');
    checks = new TextChecks({ mapping: { path: root, formats: {}, followSymlinks: false }, problems, onChanged: () => changed++, isStopped: () => false });
    writeFileSync(join(root, 'notes.txt'), 'x');
    await Promise.all([checks.afterOp('upload', 'link.pdf'), checks.afterOp('upload', 'missing.pdf'), checks.afterOp('upload', 'notes.txt')]);
    expect(kinds()).toEqual({});
  });

  it('a pass leaves the entries of files sent alone; sending the file again clears them', async () => {
    await checks.afterOp('upload', 'scan.pdf');
    problems.onPass({ skipped: [], failures: [] }, undefined, () => false);
    expect(Object.keys(kinds())).toEqual(['scan.pdf']);
    problems.mirrored('scan.pdf');
    expect(kinds()).toEqual({});
  });
});

it("the service's verdict (not ingested) is not replaced by the text check", async () => {
  const problems = new ProblemList(() => 0);
  problems.notIngested('scan.pdf', 'not ingested: failed: no text');
  expect(problems.textLayer('scan.pdf', 'no-text', NO_TEXT_REASON)).toBe(false);
  expect(problems.data().problems.map((p) => p.kind)).toEqual(['not-ingested']);
});
