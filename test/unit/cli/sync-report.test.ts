/**
 * How `dssync sync --dry-run` names each planned operation: the action in a column of 9,
 * then the path; a rename names both paths, a delete its reason unless deleted locally.
 */
import { describe, expect, it } from 'vitest';
import { describeOp } from '../../../src/cli/commands/sync-report.js';
import type { HashedFile, Op } from '../../../src/engine/plan.js';

const file = {} as HashedFile;

describe('describeOp', () => {
  it('puts every kind of operation in words, its names made printable', () => {
    const ops: [Op, string][] = [
      [{ kind: 'upload', path: 'a.txt', file }, 'upload   a.txt'],
      [{ kind: 'replace', path: 'a.txt', file, oldDocumentIds: ['d1'] }, 'replace  a.txt'],
      [{ kind: 'rename', from: 'a.txt', path: 'b.txt', documentId: 'd1', file }, 'rename   a.txt -> b.txt'],
      [{ kind: 'update-meta', path: 'a.txt', documentId: 'd1', file }, 'update   a.txt'],
      [{ kind: 'delete', path: 'a.txt', documentId: 'd1', reason: 'deleted-locally' }, 'delete   a.txt'],
      [{ kind: 'delete', path: 'a.txt', documentId: 'd2', reason: 'duplicate' }, 'delete   a.txt (duplicate)'],
      [{ kind: 'adopt', path: 'a.txt', documentId: 'd1', file }, 'adopt    a.txt'],
      [{ kind: 'forget', path: 'a.txt' }, 'forget   a.txt'],
      [{ kind: 'upload', path: 'bell\u0007.txt', file }, 'upload   bell\\x07.txt'],
    ];
    for (const [op, line] of ops) expect(describeOp(op)).toBe(line);
  });
});
