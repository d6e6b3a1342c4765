/**
 * A state file that cannot be written (disk full) while a plan runs: found by the chaos
 * run (bench/chaos, state-disk-full), where the daemon died of an unhandled rejection.
 * Nothing may be uploaded without a durable intent, and the pass must end with failures
 * the runner retries, not with a crash.
 */
import { describe, expect, it } from 'vitest';
import { executePlan } from '../../../src/engine/executor.js';
import { documentFields } from '../../../src/engine/document-fields.js';
import type { HashedFile, Op } from '../../../src/engine/plan.js';
import { silentLogger } from '../../../src/log.js';
import { StateWriteError } from '../../../src/state/errors.js';
import { FakeApi } from '../../helpers/fake-api.js';
import { MemoryState } from '../../helpers/memory-state.js';
import { neverOpened } from '../../helpers/upload-file.js';

class FullDiskState extends MemoryState {
  override async beginIntent(): Promise<string> {
    throw new StateWriteError('/var/lib/dssync/state.json', Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }));
  }
}

const file = (i: number): HashedFile => ({ path: `f${i}.txt`, diskPath: `/srv/share/f${i}.txt`, size: 10, mtimeMs: 1000, sha256: `h${i}` });

describe('executePlan when the state cannot be written', () => {
  it('sends no upload, reports each file with E_STATE_WRITE, and settles', async () => {
    const api = new FakeApi();
    const rejections: unknown[] = [];
    const onRejection = (e: unknown): void => void rejections.push(e);
    process.on('unhandledRejection', onRejection);
    try {
      const ops: Op[] = [
        { kind: 'upload', path: 'f1.txt', file: file(1) },
        { kind: 'replace', path: 'f2.txt', file: file(2), oldDocumentIds: ['old2'] },
      ];
      const result = await executePlan(ops, {
        api,
        state: new FullDiskState(),
        mappingId: 'm1',
        dataSourceId: 'ds1',
        desired: (f) => documentFields({ mappingId: 'm1', root: '/srv/share' }, f),
        batchFiles: 20,
        batchBytes: 1 << 20,
        concurrency: 2,
        now: () => 0,
        logger: silentLogger,
        open: neverOpened,
      });
      await new Promise((r) => setImmediate(r));
      expect(rejections).toEqual([]);
      expect(api.count('uploadDocuments')).toBe(0);
      expect(api.count('deleteDocument')).toBe(0);
      expect(result.failures.map((f) => [f.path, f.code])).toEqual([
        ['f1.txt', 'E_STATE_WRITE'],
        ['f2.txt', 'E_STATE_WRITE'],
      ]);
      expect(result.failures[0]!.message).toMatch(/no space left/);
    } finally {
      process.off('unhandledRejection', onRejection);
    }
  });
});
