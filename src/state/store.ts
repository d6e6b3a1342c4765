/**
 * StateStore: the daemon's memory of what it synced (DESIGN §1.4, §4), on lowdb 7 with a
 * compact, cached, durable adapter.
 *
 * - Reads are plain property reads of the in-memory state (`mapping(id).files[path]`).
 *   Treat what they return as read-only: every change goes through a method here, which
 *   keeps the encoder's caches right and schedules a write.
 * - Mutations are coalesced: one write at most every `writeDelayMs`, one write in flight.
 * - beginIntent is durable before it resolves (group commit); flush() covers every
 *   mutation made before it was called.
 * - The file is replaced atomically (temp + fsync + rename + directory fsync), mode 0600,
 *   guarded by a lock file so that two daemons never share it.
 * - The state holds no secret: there is no field for a token, and none must be added.
 */
import { randomUUID } from 'node:crypto';
import { dirname, resolve } from 'node:path';
import { Low } from 'lowdb';
import { silentLogger, type Logger } from '../log.js';
import { StateFileAdapter, type ReadStats, type WriteStats } from './adapter.js';
import { ensureDir, nodeStateFs, removeStaleTemps, restrictMode, type StateFs } from './atomic-file.js';
import {
  IntentSchema,
  PassRecordSchema,
  RejectedSchema,
  StateCodec,
  checked,
  fileEntryProblem,
  newMappingState,
  newState,
} from './codec.js';
import { errnoOf, isStateError, StateCorruptError, StateWriteError } from './errors.js';
import { acquireLock, type Lock } from './lock.js';
import type { FileEntry, Intent, MappingState, PassRecord, RejectedFile, StateFile } from './schema.js';
import { realTimers, WriteScheduler, type Timers } from './write-scheduler.js';

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
/** An intent as the engine describes it; the store adds `id` and `startedAt`. */
export type NewIntent = DistributiveOmit<Intent, 'id' | 'startedAt'>;

export interface StateStoreOptions {
  /** Wall clock (ms since the epoch) for intents' startedAt and the corrupt file's name. */
  clock?: () => number;
  /** Coalescing delay of writes after a mutation. Default 250 ms. */
  writeDelayMs?: number;
  /** Longest delay between retries of a failing write. Default 30 s. */
  maxRetryDelayMs?: number;
  logger?: Logger;
  fs?: StateFs;
  timers?: Timers;
  /**
   * A corrupt file: 'fail' (default) throws StateCorruptError; 'reset' moves it aside as
   * `<path>.corrupt-<timestamp>`, logs a warning and starts empty (the engine then rebuilds
   * the state from the service's metadata).
   */
  onCorrupt?: 'fail' | 'reset';
  /** Called on every failed write (also logged, and kept in `lastWriteError`). */
  onWriteError?: (err: StateWriteError) => void;
  /** Take `<path>.lock` (default true). Only for callers that hold it themselves, and tests. */
  lock?: boolean;
}

export class StateStore {
  private readonly scheduler: WriteScheduler;
  private writeError: StateWriteError | undefined;
  private closing: Promise<void> | undefined;
  private closed = false;

  private constructor(
    /** Absolute path of the state file. */
    readonly path: string,
    private readonly db: Low<StateFile>,
    private readonly adapter: StateFileAdapter,
    private readonly codec: StateCodec,
    private readonly lock: Lock | undefined,
    private readonly clock: () => number,
    private readonly logger: Logger,
    timers: Timers,
    opts: StateStoreOptions,
  ) {
    this.scheduler = new WriteScheduler({
      write: () => this.writeNow(),
      delayMs: opts.writeDelayMs ?? 250,
      maxRetryDelayMs: opts.maxRetryDelayMs ?? 30_000,
      timers,
      onError: (err, failures) => {
        const e = err instanceof StateWriteError ? err : new StateWriteError(this.path, err);
        this.writeError = e;
        this.logger.error({ file: this.path, errno: e.errno, consecutiveFailures: failures }, e.message);
        try {
          opts.onWriteError?.(e);
        } catch (cbErr) {
          this.logger.error({ err: cbErr }, 'onWriteError callback threw');
        }
      },
      onSuccess: (afterFailures) => {
        this.writeError = undefined;
        this.logger.info({ file: this.path, afterFailures }, `state file ${this.path} written again after ${afterFailures} failed attempts`);
      },
    });
  }

  static async open(path: string, opts: StateStoreOptions = {}): Promise<StateStore> {
    const abs = resolve(path);
    const fs = opts.fs ?? nodeStateFs;
    const logger = opts.logger ?? silentLogger;
    const clock = opts.clock ?? Date.now;
    const timers = opts.timers ?? realTimers;
    await ensureDir(fs, dirname(abs));
    const lock = opts.lock === false ? undefined : await acquireLock(abs, { clock, logger });
    try {
      const oldMode = await restrictMode(fs, abs);
      if (oldMode !== undefined) {
        logger.warn({ file: abs, mode: oldMode.toString(8) }, `state file ${abs} was readable by others (mode ${oldMode.toString(8)}): restricted to 600`);
      }
      // Only with the lock held: another process's temp file would otherwise be in use.
      if (lock) {
        const removed = await removeStaleTemps(fs, abs);
        if (removed.length) logger.info({ removed }, 'removed temp files of an interrupted state write');
      }
      const codec = new StateCodec();
      const adapter = new StateFileAdapter(abs, fs, codec);
      const db = new Low<StateFile>(adapter, newState());
      try {
        await db.read();
      } catch (err) {
        if (err instanceof StateCorruptError && opts.onCorrupt === 'reset') {
          const aside = `${abs}.corrupt-${fileStamp(clock())}`;
          await fs.rename(abs, aside);
          logger.warn(
            { file: abs, movedTo: aside, detail: err.detail },
            `state file ${abs} was corrupt (${err.detail}); moved it to ${aside} and starting with an empty state`,
          );
          db.data = newState();
        } else if (isStateError(err) || errnoOf(err) === undefined) {
          throw err;
        } else {
          throw new Error(`cannot read state file ${abs}: ${(err as Error).message}`, { cause: err });
        }
      }
      const store = new StateStore(abs, db, adapter, codec, lock, clock, logger, timers, opts);
      if (adapter.migratedFrom !== undefined) {
        logger.info({ file: abs, from: adapter.migratedFrom }, `state file migrated from version ${adapter.migratedFrom}`);
        store.scheduler.markDirty();
      }
      if (adapter.readStats) {
        logger.debug({ file: abs, ...adapter.readStats }, 'state loaded');
        // In the background: the first write then finds the entries encoded (fast write).
        adapter.warm(db.data).catch((err: unknown) => logger.debug({ err }, 'state encoding ahead of the first write failed'));
      }
      return store;
    } catch (err) {
      await lock?.release().catch(() => undefined);
      throw err;
    }
  }

  // ---- reads -------------------------------------------------------------------------

  mapping(id: string): MappingState | undefined {
    return this.db.data.mappings[id];
  }

  /** Files tracked in a mapping (cheap: for status and metrics, however large the state). */
  fileCount(id: string): number {
    const m = this.db.data.mappings[id];
    return m ? this.codec.fileCount(id, m) : 0;
  }

  mappingIds(): string[] {
    return Object.keys(this.db.data.mappings);
  }

  openIntents(mappingId: string): Intent[] {
    const m = this.db.data.mappings[mappingId];
    if (!m) return [];
    return Object.values(m.intents).sort((a, b) => (a.startedAt < b.startedAt ? -1 : a.startedAt > b.startedAt ? 1 : 0));
  }

  /** The last write failure, until a write succeeds again. */
  get lastWriteError(): StateWriteError | undefined {
    return this.writeError;
  }

  /** True while some mutation is not yet on disk (or being written). */
  get pendingWrite(): boolean {
    return this.scheduler.dirty || this.scheduler.writing;
  }

  get writeStats(): Readonly<WriteStats> {
    return this.adapter.stats;
  }

  /** Size and duration of the load, when a file was read. */
  get readStats(): Readonly<ReadStats> | undefined {
    return this.adapter.readStats;
  }

  // ---- mutations ---------------------------------------------------------------------

  /**
   * Returns the mapping's state, creating it when missing. When the mapping now points to
   * another data source (the config changed), what was known about the old one (files,
   * intents, rejected files, last pass) no longer applies: it is dropped, with a warning,
   * and the engine starts that mapping afresh. A changed root is just recorded. Callers
   * must re-read `mapping(id)` afterwards rather than keep an older object.
   */
  ensureMapping(id: string, dataSourceId: string, root: string): MappingState {
    this.assertOpen();
    const mappings = this.db.data.mappings;
    const m = mappings[id];
    if (m && m.dataSourceId === dataSourceId) {
      if (m.root !== root) {
        m.root = root;
        this.codec.headChanged(id);
        this.changed();
      }
      return m;
    }
    if (m) {
      this.logger.warn(
        {
          mapping: id,
          from: m.dataSourceId,
          to: dataSourceId,
          files: Object.keys(m.files).length,
          openIntents: Object.keys(m.intents).length,
        },
        `mapping ${id} now points to data source ${dataSourceId} instead of ${m.dataSourceId}: its state is reset`,
      );
    }
    const fresh = newMappingState(dataSourceId, root);
    mappings[id] = fresh;
    this.codec.indexMapping(id, fresh);
    this.changed();
    return fresh;
  }

  removeMapping(id: string): void {
    this.assertOpen();
    if (!(id in this.db.data.mappings)) return;
    delete this.db.data.mappings[id];
    this.codec.mappingRemoved(id);
    this.changed();
  }

  setFile(mappingId: string, path: string, entry: FileEntry): void {
    const m = this.need(mappingId);
    checkPath(mappingId, path);
    const problem = fileEntryProblem(entry);
    if (problem) throw new TypeError(`state: file entry of ${JSON.stringify(path)} in mapping ${mappingId}: ${problem}`);
    // A frozen copy of the known fields: the caller's object stays its own, and an entry
    // changed in place (bypassing the encoder's caches) fails loudly.
    const copy: FileEntry = Object.freeze({
      documentId: entry.documentId,
      size: entry.size,
      mtimeMs: entry.mtimeMs,
      sha256: entry.sha256,
      syncedAt: entry.syncedAt,
    });
    this.codec.setFile(mappingId, m, path, copy);
    this.changed();
  }

  deleteFile(mappingId: string, path: string): void {
    const m = this.need(mappingId);
    if (!(path in m.files)) return;
    this.codec.setFile(mappingId, m, path, undefined);
    this.changed();
  }

  /** `from` disappears and `to` gets `entry`, in the same write. */
  renameFile(mappingId: string, from: string, to: string, entry: FileEntry): void {
    this.need(mappingId);
    checkPath(mappingId, to);
    const problem = fileEntryProblem(entry);
    if (problem) throw new TypeError(`state: file entry of ${JSON.stringify(to)} in mapping ${mappingId}: ${problem}`);
    if (from !== to) this.deleteFile(mappingId, from);
    this.setFile(mappingId, to, entry);
  }

  /**
   * Records an intent and resolves with its id once it is on disk: only then may the caller
   * write to the service. Concurrent calls share writes. If the write fails, the intent is
   * dropped again and the call rejects (StateWriteError): the caller must not proceed.
   */
  async beginIntent(mappingId: string, intent: NewIntent): Promise<string> {
    const m = this.need(mappingId);
    const id = randomUUID();
    const c = checked(IntentSchema, { ...intent, id, startedAt: new Date(this.clock()).toISOString() });
    if (!c.ok) throw new TypeError(`state: intent for mapping ${mappingId}: ${c.problem}`);
    m.intents[id] = c.value;
    this.codec.headChanged(mappingId);
    this.changed();
    try {
      await this.scheduler.flush();
    } catch (err) {
      if (m.intents[id]) {
        delete m.intents[id];
        this.codec.headChanged(mappingId);
        this.changed();
      }
      throw err instanceof StateWriteError ? err : new StateWriteError(this.path, err);
    }
    return id;
  }

  /** The remote write is done (or known not to have happened). Coalesced. */
  endIntent(mappingId: string, intentId: string): boolean {
    this.assertOpen();
    const m = this.db.data.mappings[mappingId];
    if (!m || !m.intents[intentId]) return false;
    delete m.intents[intentId];
    this.codec.headChanged(mappingId);
    this.changed();
    return true;
  }

  setRejected(mappingId: string, path: string, rejected: RejectedFile): void {
    const m = this.need(mappingId);
    checkPath(mappingId, path);
    const c = checked(RejectedSchema, rejected);
    if (!c.ok) throw new TypeError(`state: rejected file ${JSON.stringify(path)} in mapping ${mappingId}: ${c.problem}`);
    m.rejected[path] = c.value;
    this.codec.headChanged(mappingId);
    this.changed();
  }

  clearRejected(mappingId: string, path: string): boolean {
    const m = this.need(mappingId);
    if (!(path in m.rejected)) return false;
    delete m.rejected[path];
    this.codec.headChanged(mappingId);
    this.changed();
    return true;
  }

  setLastPass(mappingId: string, pass: PassRecord): void {
    const m = this.need(mappingId);
    const c = checked(PassRecordSchema, pass);
    if (!c.ok) throw new TypeError(`state: last pass of mapping ${mappingId}: ${c.problem}`);
    m.lastPass = c.value;
    this.codec.headChanged(mappingId);
    this.changed();
  }

  // ---- persistence -------------------------------------------------------------------

  /** Resolves when every mutation made before the call is on disk; rejects with StateWriteError. */
  flush(): Promise<void> {
    return this.scheduler.flush();
  }

  /**
   * Flushes (including mutations made while flushing), stops the timers and releases the
   * lock. Mutations after close() resolved throw. Rejects if the last flush failed (the lock
   * is released all the same).
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      try {
        for (let i = 0; i < 10 && this.pendingWrite; i++) await this.scheduler.flush();
      } finally {
        this.closed = true;
        this.scheduler.stop();
        await this.lock?.release();
      }
    })();
    return this.closing;
  }

  // ---- internals ---------------------------------------------------------------------

  private writeNow(): Promise<void> {
    // Low.write() calls adapter.write synchronously: the snapshot is taken right here.
    return this.db.write().catch((err: unknown) => {
      throw err instanceof StateWriteError ? err : new StateWriteError(this.path, err);
    });
  }

  private changed(): void {
    this.scheduler.markDirty();
  }

  private need(mappingId: string): MappingState {
    this.assertOpen();
    const m = this.db.data.mappings[mappingId];
    if (!m) throw new Error(`state: unknown mapping ${JSON.stringify(mappingId)} (call ensureMapping first)`);
    return m;
  }

  private assertOpen(): void {
    if (this.closed) throw new Error(`state store ${this.path} is closed: the change would be lost`);
  }
}

/**
 * Reads the state file without locking or writing it (for `dssync status` and other
 * readers while a daemon runs). Undefined when there is no file. Throws like open().
 */
export async function readStateFile(path: string, fs: StateFs = nodeStateFs): Promise<StateFile | undefined> {
  const abs = resolve(path);
  const adapter = new StateFileAdapter(abs, fs, new StateCodec());
  try {
    return (await adapter.read()) ?? undefined;
  } catch (err) {
    if (isStateError(err) || errnoOf(err) === undefined) throw err;
    throw new Error(`cannot read state file ${abs}: ${(err as Error).message}`, { cause: err });
  }
}

function checkPath(mappingId: string, path: string): void {
  if (typeof path !== 'string' || path === '') {
    throw new TypeError(`state: empty or invalid file path in mapping ${mappingId}`);
  }
}

/** 2026-11-22T02-14-28-123Z: sortable, and valid in a file name everywhere. */
function fileStamp(ms: number): string {
  return new Date(ms).toISOString().replace(/[:.]/g, '-');
}
