/** What the service does to names, learned from one answer at a time (issue 34, cases 6-8). */
import { describe, expect, it } from 'vitest';
import { learnNameRule, nameAsStored, storedName, type NameRule } from '../../../src/engine/service-names.js';

describe('learnNameRule: the rewrite that turns the name sent into the name shown', () => {
  it.each<[string, string, NameRule | undefined]>([
    ['Sub/Report.txt', 'sub/report.txt', { lower: true }],
    ['sub/report.txt', 'sub/report', { noExtension: true }],
    ['sub/report.txt', 'sub/report.txt (1)', { suffix: ' (1)' }],
    ['Sub/Report.txt', 'sub/report (1)', { lower: true, noExtension: true, suffix: ' (1)' }],
    [`${'deep/'.repeat(30)}a.txt`, `${'deep/'.repeat(20)}`, { maxBytes: 100 }],
    ['a.txt', 'something else.pdf', undefined],
  ])('%s shown as %s', (sent, shown, rule) => {
    const learned = learnNameRule(sent, shown);
    expect(learned).toEqual(rule);
    if (learned) expect(storedName(sent, learned)).toBe(shown);
  });

  it('keeps what earlier answers taught where a name does not show it (a lower-case name, a short one)', () => {
    const prior = learnNameRule('A.txt', 'a (1)')!;
    const withCut = learnNameRule(`${'x'.repeat(120)}.txt`, `${'x'.repeat(100)}`, prior);
    expect(withCut).toEqual({ lower: true, noExtension: true, suffix: ' (1)', maxBytes: 100 });
    expect(learnNameRule('b.md', 'b (1)', withCut)).toEqual(withCut);
  });
});

describe('nameAsStored', () => {
  it('is the name sent, or the name the rule makes of it; with renames ignored, any name but a marked one', () => {
    expect(nameAsStored('sub/report (1)', 'Sub/Report.txt', { rule: { lower: true, noExtension: true, suffix: ' (1)' } })).toBe(true);
    expect(nameAsStored('sub/report', 'Sub/Report.txt', {})).toBe(false);
    expect(nameAsStored('old-name.txt', 'new-name.txt', { renamesIgnored: true })).toBe(true);
    expect(nameAsStored('.dssync-upload-abc.new-name.dssync-upload-abc.txt', 'new-name.txt', { renamesIgnored: true })).toBe(false);
  });
});
