/**
 * Persistence for `dataDir`: the whole store as one JSON file (emulator-store.json),
 * loaded at start and rewritten atomically (temp file, fsync, rename) a short while after
 * changes. Writes never overlap, and a big store is written less often: the next write
 * waits at least four times as long as the last one took, so serialising a large store
 * never occupies more than about a fifth of the time.
 *
 * The store holds every uploaded document: the folder is created 0700 and the file 0600
 * (whatever the umask), and the temp file is created exclusively without following links
 * (O_EXCL|O_NOFOLLOW), so a link planted at its name cannot redirect the write.
 */
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { MemoryStore, StoreSnapshot } from './store.js';

export const STORE_FILE = 'emulator-store.json';
const FILE_MODE = 0o600;
const DIR_MODE = 0o700;
const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = constants;

export async function loadStore(dataDir: string, store: MemoryStore): Promise<void> {
  await mkdir(dataDir, { recursive: true, mode: DIR_MODE });
  const file = join(dataDir, STORE_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  try {
    store.restore(JSON.parse(text) as StoreSnapshot);
  } catch (err) {
    throw new Error(`cannot load the emulator data in ${file}: ${(err as Error).message} (move the file away to start empty)`, { cause: err });
  }
}

export class StoreWriter {
  private timer: NodeJS.Timeout | undefined;
  private dirty = false;
  private writing: Promise<void> | undefined;
  private lastDurationMs = 0;
  private closed = false;

  constructor(
    private readonly dataDir: string,
    private readonly store: MemoryStore,
    private readonly debounceMs = 250,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  /** A change happened: write soon. */
  markDirty(): void {
    this.dirty = true;
    if (this.timer || this.writing || this.closed) return;
    this.schedule();
  }

  /** Writes now if anything changed, waiting for a write in progress first. */
  async flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    while (this.writing) await this.writing;
    if (this.dirty) await this.write();
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
  }

  private schedule(): void {
    const delay = Math.max(this.debounceMs, 4 * this.lastDurationMs);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.write().catch(this.onError);
    }, delay);
    this.timer.unref();
  }

  private write(): Promise<void> {
    const run = async (): Promise<void> => {
      const started = Date.now();
      this.dirty = false;
      // Serialised synchronously, so the file is one consistent state of the store.
      const text = JSON.stringify(this.store.snapshot());
      const file = join(this.dataDir, STORE_FILE);
      const temp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
      try {
        const handle = await open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, FILE_MODE);
        try {
          // The mode given to open() is reduced by the umask; this is not.
          await handle.chmod(FILE_MODE);
          await handle.writeFile(text, 'utf8');
          await handle.sync();
        } finally {
          await handle.close();
        }
        await rename(temp, file);
      } catch (err) {
        this.dirty = true;
        await rm(temp, { force: true }).catch(() => {});
        throw err;
      } finally {
        this.lastDurationMs = Date.now() - started;
      }
    };
    const writing = run().finally(() => {
      this.writing = undefined;
      if (this.dirty && !this.closed && !this.timer) this.schedule();
    });
    this.writing = writing;
    return writing;
  }
}
