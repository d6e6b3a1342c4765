import { mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { journalPathOf } from '../../../src/state/journal.js';
import { stateWrittenAt } from '../../../src/state/state-check.js';
import { stateFileText } from '../../helpers/state-fixture.js';

describe('stateWrittenAt: what `dssync status` shows as "written at"', () => {
  let dir: string;
  let statePath: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'dssync-written-'));
    statePath = join(dir, 'state.json');
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  const at = (iso: string): Date => new Date(iso);

  it('is the journal time when the journal is newer than the snapshot (writes between folds)', async () => {
    await writeFile(statePath, stateFileText());
    await writeFile(journalPathOf(statePath), '');
    await utimes(statePath, at('2026-11-20T10:00:00Z'), at('2026-11-20T10:00:00Z'));
    await utimes(journalPathOf(statePath), at('2026-11-24T09:30:00Z'), at('2026-11-24T09:30:00Z'));
    expect((await stateWrittenAt(statePath))?.toISOString()).toBe('2026-11-24T09:30:00.000Z');
  });

  it('is the snapshot time right after a fold, and without a journal', async () => {
    await writeFile(statePath, stateFileText());
    await utimes(statePath, at('2026-11-24T11:00:00Z'), at('2026-11-24T11:00:00Z'));
    expect((await stateWrittenAt(statePath))?.toISOString()).toBe('2026-11-24T11:00:00.000Z');
    await writeFile(journalPathOf(statePath), '');
    await utimes(journalPathOf(statePath), at('2026-11-24T10:00:00Z'), at('2026-11-24T10:00:00Z'));
    expect((await stateWrittenAt(statePath))?.toISOString()).toBe('2026-11-24T11:00:00.000Z');
  });

  it('is unknown when there is no state file yet', async () => {
    expect(await stateWrittenAt(statePath)).toBeUndefined();
  });
});
