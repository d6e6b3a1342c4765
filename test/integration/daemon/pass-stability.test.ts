/**
 * Issue 23, defect 6: a full pass never reads a file mid-write. A file written in two halves
 * with a reload (SIGHUP, whose full pass walks everything) in the pause: the pass sets the
 * young file aside, and the service only ever receives it whole.
 */
import { appendFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { daemonTests } from '../../helpers/daemon-test.js';
import { docAt, waitConverged, waitFor } from './daemon-process.js';
import { filesUploaded } from '../../helpers/mirror-check.js';

const daemons = daemonTests();
const HALF = 'x'.repeat(3_000);

describe('dssync run: the stability window of every pass', () => {
  it('a reload during a pause in a write does not upload the half-written file', { timeout: 120_000 }, async () => {
    // A quiet time (and so the passes' stability window) long enough that the reload's walk
    // comes within it, and the second half lands within it after that pass.
    const { w, d } = await daemons.start({ config: { debounceMs: 10_000 }, files: { 'a.txt': 'alpha' } });
    const uploadsBefore = filesUploaded(w.emu);
    await writeFile(join(w.share, 'big.txt'), HALF);
    d.child.kill('SIGHUP');
    await waitFor(() => d.logs().some((l) => l.msg.startsWith('files changed within the stability window set aside')), { timeout: 30_000, what: "the reload's pass to set the young file aside" });
    await appendFile(join(w.share, 'big.txt'), HALF);
    await waitConverged(w, 'the whole file', 60_000);
    const docs = docAt(w, 'big.txt');
    expect(docs).toHaveLength(1);
    expect(docs[0]?.size).toBe(6_000);
    // One upload: the half was never sent.
    expect(filesUploaded(w.emu) - uploadsBefore).toBe(1);
  });
});
