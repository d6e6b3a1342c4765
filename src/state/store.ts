/**
 * StateStore: the daemon's memory of what it synced (DESIGN §1.4, §4): a snapshot
 * (`<path>`, one line per file, read as a stream at start and rewritten in the background:
 * snapshot-file.ts, encoder.ts) and an append-only journal (`<path>.journal`, journal.ts)
 * of the changes since.
 *
 * - Reads are plain property reads of the in-memory state (`mapping(id).files[path]`).
 *   Treat what they return as read-only: every change goes through a method here, which
 *   makes it an op (ops.ts), applies it, and queues it for the journal.
 * - A write appends the queued ops to the journal as one record and fsyncs it: it costs
 *   the same with 1,000 files as with 1,000,000. Writes are coalesced: one at most every
 *   `writeDelayMs`, one in flight.
 * - beginIntent is durable before it resolves (group commit); flush() covers every
 *   mutation made before it was called.
 * - When the journal grows past max(`foldMinBytes`, a quarter of the snapshot), it is
 *   folded: a new snapshot is written in the background (encoded in slices of a few ms,
 *   copy-on-write, a large one's rows in a worker thread, then replaced atomically: temp +
 *   fsync + rename + directory fsync), and
 *   then the journal is cut to what came after it. A load reads the snapshot and replays
 *   the journal's later ops; the replay is thus bounded by a quarter of the snapshot.
 * - Files are mode 0600, guarded by a lock file so that two daemons never share them. What
 *   reaches the disk goes through one seam, the StateFs (atomic-file.ts).
 * - The state holds no secret: there is no field for a token, and none must be added.
 */
import { randomUUID } from 'node:crypto';
import { dirname, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { silentLogger, type Logger } from '../log.js';
import { SnapshotFile, type ReadStats, type SnapshotStats, type SnapshotWorker } from './snapshot-file.js';
import { ensureDir, nodeStateFs, readBytesIfExists, removeStaleTemps, restrictMode, unlessMissing, writeFileAtomic, type StateFs } from './atomic-file.js';
import { StateCodec } from './encoder.js';
import { IntentSchema, PassRecordSchema, RejectedSchema, checked, fileEntryProblem, newState, withIntentDocuments } from './validate.js';
import { errnoOf } from '../errors/errno.js';
import { isStateError, StateCorruptError, StateReadError, StateVersionError, StateWriteError } from './errors.js';
import { Journal, journalPathOf, parseJournal } from './journal.js';
import { acquireLock, type Lock } from './lock.js';
import { applyOp, setFileOp, type StateOp } from './ops.js';
import { STATE_VERSION, type FileEntry, type Intent, type MappingState, type PassRecord, type RejectedFile, type StateFile, type StateIdentity } from './schema.js';
import { realClock, type Clock } from '../time/clock.js';
import { WriteScheduler } from './write-scheduler.js';
import { encodeIdentityRecord, identityPathOf, identityRecordOf, missingIdentityOps, readIdentityFile, type IdentityRecord } from './identity-file.js';

/** Ops that change what the identity file holds (identity-file.ts). */
const IDENTITY_OPS = new Set<StateOp[0]>(['identity', 'map', 'dsname', 'unmap', 'session']);

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
/** An intent as the engine describes it; the store adds `id` and `startedAt`. */
export type NewIntent = DistributiveOmit<Intent, 'id' | 'startedAt'>;

export interface StateStoreOptions {
  /** Time for intents' startedAt, the corrupt file's name and the write timers. */
  clock?: Clock;
  /** Coalescing delay of writes after a mutation. Default 250 ms. */
  writeDelayMs?: number;
  /** Longest delay between retries of a failing write. Default 30 s. */
  maxRetryDelayMs?: number;
  logger?: Logger;
  fs?: StateFs;
  /**
   * A corrupt file: 'fail' (default) throws StateCorruptError; 'reset' moves it aside as
   * `<path>.corrupt-<timestamp>`, logs a warning and starts empty but for what the identity
   * file keeps (identity-file.ts): the engine then rebuilds the state from the service's
   * metadata (engine/rebuild.ts). See `recovery`.
   */
  onCorrupt?: 'fail' | 'reset';
  /** Called on every failed write (also logged, and kept in `lastWriteError`). */
  onWriteError?: (err: StateWriteError) => void;
  /** Take `<path>.lock` (default true). Only for callers that hold it themselves, and tests. */
  lock?: boolean;
  /** The journal is folded into a new snapshot past max(this, snapshot size / 4). Default 8 MiB. */
  foldMinBytes?: number;
  /** Where a large snapshot's rows are encoded (snapshot-file.ts). Only for tests: one that cannot start. */
  snapshotWorker?: SnapshotWorker;
  /** Called once the lock is held, before the state is read: what needs the lock but not the state begins beside the load. */
  onLocked?: () => void;
}

/** Figures of the durable writes (the journal's appends, as SnapshotStats says them of a snapshot's) and of the snapshots. */
export interface WriteStats extends SnapshotStats {
  /** Size of the journal now. */
  journalBytes: number;
  /** The snapshot's writes (folds). */
  snapshot: Readonly<SnapshotStats>;
}

/** Size and duration of the load, and how much of the journal it replayed. */
export interface LoadStats extends ReadStats {
  journalBytes: number;
  replayedOps: number;
}

const DEFAULT_FOLD_MIN_BYTES = 8 * 1024 * 1024;

/** Why a state was rebuilt at open, as the log says it (`movedTo`: where the corrupt or damaged files are). */
const RECOVERY_WHY = {
  corrupt: (movedTo?: string) => `was corrupt (moved to ${movedTo ?? '?'})`,
  missing: () => 'is missing',
  empty: () => 'is lost: no snapshot and an empty journal (a power cut?)',
  damaged: (movedTo?: string) => `had a damaged journal (a copy is at ${movedTo ?? '?'})`,
} as const;

/**
 * The state was rebuilt at open (RECOVERY_WHY says why); `identity` says whether the
 * identity file was there to keep the installation's identity and writer sessions.
 */
export interface StateRecovery {
  kind: keyof typeof RECOVERY_WHY;
  identity: 'recovered' | 'none' | 'unreadable';
  /** Where the corrupt files were moved (kind 'corrupt'). */
  movedTo?: string | undefined;
  /** The mappings whose documents are recognised again by the next sync (rebuild). */
  mappings: string[];
}

export class StateStore {
  private readonly scheduler: WriteScheduler;
  private closing: Promise<void> | undefined;
  private closed = false;
  private readonly stats: SnapshotStats = { writes: 0, failures: 0, lastBytes: 0, lastEncodeMs: 0, lastMaxBlockMs: 0, lastWriteMs: 0 };
  /** The fold in progress. */
  private folding: Promise<void> | undefined;
  /** No new fold before the journal reaches this size (after a failed one). */
  private foldBlockedBelow = 0;
  private readonly foldMinBytes: number;
  private loadStats: LoadStats | undefined;
  /** The identity file's path, the text last written or read, and whether it is out of date. */
  private readonly identityPath: string;
  private readonly fs: StateFs;
  private identityText: string | undefined;
  private identityDirty = false;
  /** Mappings recovered from the identity file whose documents are not recorded yet. */
  private readonly rebuild = new Set<string>();
  /** What open() rebuilt, if anything. */
  recovery: StateRecovery | undefined;
  /**
   * A snapshot of the current format is on disk. Until there is one, no record is appended:
   * a reader, any release's, reads the snapshot first and refuses a format newer than its
   * own there, before it reads the journal (docs/upgrading.md). So a new state writes one at
   * its first write, and a state of an older format (a journal alone, or an older snapshot)
   * before its first write in the current one.
   */
  private snapshotCurrent = false;

  private constructor(
    /** Absolute path of the state file. */
    readonly path: string,
    /** The state in memory: what the snapshot and the journal's ops make. */
    private readonly state: StateFile,
    private readonly snapshotFile: SnapshotFile,
    private readonly codec: StateCodec,
    private readonly journal: Journal,
    private readonly lock: Lock | undefined,
    private readonly clock: () => number,
    private readonly logger: Logger,
    time: Clock,
    opts: StateStoreOptions,
  ) {
    this.foldMinBytes = opts.foldMinBytes ?? DEFAULT_FOLD_MIN_BYTES;
    this.identityPath = identityPathOf(path);
    this.fs = opts.fs ?? nodeStateFs;
    this.scheduler = new WriteScheduler({
      write: () => this.writeNow(),
      delayMs: opts.writeDelayMs ?? 250,
      maxRetryDelayMs: opts.maxRetryDelayMs ?? 30_000,
      clock: time,
      onError: (err, failures) => {
        const e = err instanceof StateWriteError ? err : new StateWriteError(this.path, err);
        this.logger.error({ file: this.path, errno: e.errno, consecutiveFailures: failures }, e.message);
        try {
          opts.onWriteError?.(e);
        } catch (cbErr) {
          this.logger.error({ err: cbErr }, 'onWriteError callback threw');
        }
      },
      onSuccess: (afterFailures) => {
        this.logger.info({ file: this.path, afterFailures }, `state file ${this.path} written again after ${afterFailures} failed attempts`);
      },
    });
  }

  static async open(path: string, opts: StateStoreOptions = {}): Promise<StateStore> {
    const abs = resolve(path);
    const fs = opts.fs ?? nodeStateFs;
    const logger = opts.logger ?? silentLogger;
    const time = opts.clock ?? realClock;
    const clock = (): number => time.now();
    await ensureDir(fs, dirname(abs));
    const lock = opts.lock === false ? undefined : await acquireLock(abs, { clock: time, logger });
    try {
      for (const file of [abs, journalPathOf(abs)]) {
        const oldMode = await restrictMode(fs, file);
        if (oldMode !== undefined) {
          logger.warn({ file, mode: oldMode.toString(8) }, `state file ${file} was readable by others (mode ${oldMode.toString(8)}): restricted to 600`);
        }
      }
      // Only with the lock held: another process's temp file would otherwise be in use.
      const journalPath = journalPathOf(abs);
      if (lock) {
        const removed = [...(await removeStaleTemps(fs, abs)), ...(await removeStaleTemps(fs, journalPath)), ...(await removeStaleTemps(fs, identityPathOf(abs)))];
        if (removed.length) logger.info({ removed }, 'removed temp files of an interrupted state write');
      }
      opts.onLocked?.();
      // Read before the journal: past a damaged range of it, what this file keeps is restored first.
      const idFile = await readIdentityFile(fs, identityPathOf(abs));
      const codec = new StateCodec();
      const snapshotFile = new SnapshotFile(abs, fs, codec, { logger, worker: opts.snapshotWorker });
      let state = newState();
      const t0 = performance.now();
      let loaded: Loaded;
      let recovery: Omit<StateRecovery, 'identity' | 'mappings'> | undefined;
      try {
        state = (await snapshotFile.read()) ?? state;
        loaded = await loadJournal(fs, journalPath, state, codec, { withSnapshot: snapshotFile.readStats !== undefined, seed: idFile.record });
      } catch (err) {
        if (err instanceof StateCorruptError && opts.onCorrupt === 'reset') {
          const moved: string[] = [];
          for (const file of [abs, journalPath]) {
            const aside = await asideName(fs, `${file}.corrupt`, clock());
            if (await unlessMissing(fs.rename(file, aside).then(() => true))) moved.push(aside);
          }
          const aside = moved[0] ?? `${abs}.corrupt`;
          logger.warn(
            { file: abs, movedTo: aside, alsoMoved: moved.slice(1), detail: err.detail },
            `state file ${abs} was corrupt (${err.detail}); moved it to ${aside} and starting with an empty state`,
          );
          state = newState();
          codec.reset();
          loaded = { lastSeq: 0, bytes: 0, exists: false, replayed: 0, records: 0 };
          recovery = { kind: 'corrupt', movedTo: aside };
        } else {
          throw readFailure(abs, err);
        }
      }
      if (loaded.torn !== undefined) {
        // Cut the torn record off in place (it needs no free space) before anything is
        // appended after it; a crash during the cut leaves the same torn end, cut again.
        logger.warn({ file: journalPath, detail: loaded.torn.problem }, `state journal ${journalPath}: ignored ${loaded.torn.problem} (a write cut short by a crash)`);
        const fh = await fs.open(journalPath, 'r+');
        try {
          await fh.truncate(loaded.torn.valid);
          await fh.sync();
        } finally {
          await fh.close();
        }
      }
      if (loaded.damage !== undefined) {
        // Damage is never cut in place: the file is copied as it is first (no copy, no start),
        // and the journal is replaced only by the fold below, which writes what was recovered.
        const d = loaded.damage;
        const copy = await asideName(fs, `${journalPath}.damaged`, clock());
        await writeFileAtomic(fs, copy, [d.bytes]).catch((err: unknown) => {
          const why = `the journal is damaged (${d.ranges.join('; ')}) and no copy of it could be kept as ${copy} (${(err as Error).message}): it was left as it is; free space beside the state and start again`;
          throw new StateWriteError(journalPath, Object.assign(new Error(why), { code: errnoOf(err) }));
        });
        logger.warn(
          { file: journalPath, copy, damaged: d.ranges, lostOps: d.lostOps, recoveredRecords: loaded.records },
          `state journal ${journalPath} is damaged (${d.ranges.join('; ')}): kept a copy as ${copy}; recovered ${loaded.records} valid record(s) before and after the damage; ` +
            `lost ${d.lostBytes} byte(s) holding op(s) ${d.lostOps.join(', ')} — the next sync recognises their documents from the listing (docs/reliability.md, "Damage and torn tails")`,
        );
        recovery = { kind: 'damaged', movedTo: copy };
      }
      const journal = new Journal(journalPath, fs, { lastSeq: loaded.lastSeq, bytes: loaded.bytes, exists: loaded.exists });
      const store = new StateStore(abs, state, snapshotFile, codec, journal, lock, clock, logger, time, opts);
      store.snapshotCurrent = snapshotFile.readStats !== undefined && snapshotFile.migratedFrom === undefined;
      if (recovery === undefined && !snapshotFile.readStats && loaded.records === 0) {
        // No snapshot and a journal without a record: the state is lost (a 0-byte journal after
        // a power cut), or was never written (nothing beside it).
        if (loaded.exists) recovery = { kind: 'empty' };
        else if (idFile.record !== undefined || idFile.problem !== undefined) recovery = { kind: 'missing' };
      }
      await store.applyIdentityFile(idFile, recovery);
      if (recovery?.kind === 'damaged') {
        // What was recovered goes into a snapshot now, and the damaged journal (its copy kept) is replaced.
        await store.fold();
        if (!store.snapshotCurrent) throw new StateWriteError(abs, new Error(`the state recovered from the damaged journal could not be written (a copy of the journal is at ${recovery.movedTo ?? '?'})`));
      }
      if (snapshotFile.readStats || loaded.exists) {
        store.loadStats = { bytes: 0, ...snapshotFile.readStats, loadMs: performance.now() - t0, journalBytes: loaded.bytes, replayedOps: loaded.replayed };
        if (snapshotFile.readStats) logger.debug({ file: abs, ...store.loadStats }, 'state loaded');
      }
      if (snapshotFile.migratedFrom !== undefined) {
        logger.info({ file: abs, from: snapshotFile.migratedFrom }, `state file migrated from version ${snapshotFile.migratedFrom}`);
        store.startFold();
      }
      return store;
    } catch (err) {
      await lock?.release().catch(() => undefined);
      throw err;
    }
  }

  // ---- reads -------------------------------------------------------------------------

  mapping(id: string): MappingState | undefined {
    return this.state.mappings[id];
  }

  /** Who owns the documents this state records (undefined until setIdentity). */
  get identity(): StateIdentity | undefined {
    return this.state.identity;
  }

  /** True when the state records any mapping. */
  hasRecords(): boolean {
    return this.mappingIds().length > 0;
  }

  /** Ids of the mappings the state records. */
  mappingIds(): string[] {
    return Object.keys(this.state.mappings);
  }

  /** Files tracked in a mapping (cheap: for status and metrics, however large the state). */
  fileCount(id: string): number {
    return this.state.mappings[id]?.files.size ?? 0;
  }

  /** True while some mutation is not yet on disk (or being written). */
  get pendingWrite(): boolean {
    return this.scheduler.dirty || this.scheduler.writing;
  }

  get writeStats(): Readonly<WriteStats> {
    return { ...this.stats, journalBytes: this.journal.bytes, snapshot: this.snapshotFile.stats };
  }

  /** Size and duration of the load (snapshot and journal replay), when a file was read. */
  get readStats(): Readonly<LoadStats> | undefined {
    return this.loadStats;
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
    const m = this.state.mappings[id];
    if (m && m.dataSourceId === dataSourceId) {
      if (m.root !== root) this.commit(['map', id, dataSourceId, root]);
      return m;
    }
    if (m) {
      const fields = { mapping: id, from: m.dataSourceId, to: dataSourceId, files: this.fileCount(id), openIntents: Object.keys(m.intents).length };
      this.logger.warn(fields, `mapping ${id} now points to data source ${dataSourceId} instead of ${m.dataSourceId}: its state is reset`);
    }
    this.commit(['map', id, dataSourceId, root]);
    return this.state.mappings[id] as MappingState;
  }

  /** Records the configured name the mapping's data source was resolved by (engine/data-source.ts). */
  recordDataSourceName(mappingId: string, name: string): void {
    this.assertOpen();
    const m = this.state.mappings[mappingId];
    if (!m || m.dataSourceName === name) return;
    this.commit(['dsname', mappingId, name]);
  }

  /** Records the installation's identity (engine/installation.ts establishIdentity decides it). */
  setIdentity(identity: StateIdentity): void {
    this.assertOpen();
    const now = this.state.identity;
    if (now && now.installationId === identity.installationId && now.origin === identity.origin && now.formerIds.join('\0') === identity.formerIds.join('\0')) return;
    this.commit(['identity', identity.installationId, identity.origin, [...identity.formerIds]]);
  }

  /**
   * Adds ids this installation used before to its identity (engine/mirror.ts: a listing
   * showed them on documents the state records); durable with the next flush, and in the
   * identity file. True when one was not held yet.
   */
  addFormerIds(ids: readonly string[]): boolean {
    const id = this.identity;
    const added = id === undefined ? [] : ids.filter((f) => f !== id.installationId && !id.formerIds.includes(f));
    if (id === undefined || added.length === 0) return false;
    this.setIdentity({ ...id, formerIds: [...id.formerIds, ...added] });
    return true;
  }

  /**
   * Records a writer session of the mapping (schema.ts MappingState.sessions); durable with
   * the next flush. True when it was not recorded yet.
   */
  recordSession(mappingId: string, session: string, at: number): boolean {
    this.need(mappingId);
    if (this.state.mappings[mappingId]!.sessions?.[session] !== undefined) return false;
    this.commit(['session', mappingId, session, at]);
    return true;
  }

  /**
   * Whether the mapping was recovered from the identity file and its documents are not
   * recorded yet (engine/rebuild.ts records them, then calls rebuilt()).
   */
  needsRebuild(mappingId: string): boolean {
    return this.rebuild.has(mappingId);
  }

  /** The mapping's documents are recorded again: durable, then the identity file says so. */
  async rebuilt(mappingId: string): Promise<void> {
    if (!this.rebuild.delete(mappingId)) return;
    this.identityDirty = true;
    this.scheduler.markDirty();
    await this.scheduler.flush();
  }

  /** Forgets everything the state records of a mapping (`dssync identity reset`). */
  dropMapping(mappingId: string): void {
    this.assertOpen();
    if (this.state.mappings[mappingId]) this.commit(['unmap', mappingId]);
  }

  setFile(mappingId: string, path: string, entry: FileEntry): void {
    this.need(mappingId);
    checkEntry(mappingId, path, entry);
    this.commit(setFileOp(mappingId, path, entry));
  }

  deleteFile(mappingId: string, path: string): void {
    const m = this.need(mappingId);
    if (!m.files.has(path)) return;
    this.commit(['del', mappingId, path]);
  }

  /** `from` disappears and `to` gets `entry`, in the same write. */
  renameFile(mappingId: string, from: string, to: string, entry: FileEntry): void {
    this.need(mappingId);
    checkEntry(mappingId, to, entry);
    if (from !== to) this.deleteFile(mappingId, from);
    this.setFile(mappingId, to, entry);
  }

  /**
   * Records an intent and resolves with its id once it is on disk: only then may the caller
   * write to the service. Concurrent calls share writes. If the write fails, the intent is
   * dropped again and the call rejects (StateWriteError): the caller must not proceed.
   */
  async beginIntent(mappingId: string, intent: NewIntent): Promise<string> {
    this.need(mappingId);
    const id = randomUUID();
    const c = checked(IntentSchema, { ...intent, id, startedAt: new Date(this.clock()).toISOString() });
    if (!c.ok) throw new TypeError(`state: intent for mapping ${mappingId}: ${c.problem}`);
    this.commit(['intent', mappingId, c.value]);
    try {
      await this.scheduler.flush();
    } catch (err) {
      if (!this.closed && this.state.mappings[mappingId]?.intents[id]) this.commit(['endIntent', mappingId, id]);
      throw err instanceof StateWriteError ? err : new StateWriteError(this.path, err);
    }
    return id;
  }

  /**
   * Records the documents an upload created, by file of its intent (undefined: not known),
   * as soon as the answer names them, before their metadata is written: a later pass then
   * knows exactly which documents are the upload's (docs/reliability.md, "Upload intents").
   * Not awaited: lost in a crash, the intent is as if the answer had been lost.
   */
  setIntentDocuments(mappingId: string, intentId: string, documentIds: readonly (string | undefined)[]): void {
    this.assertOpen();
    const intent = this.state.mappings[mappingId]?.intents[intentId];
    if (!intent || intent.kind !== 'upload') return;
    const next = withIntentDocuments(intent, documentIds);
    if (next !== intent) this.commit(['intent', mappingId, next]);
  }

  /** The remote write is done (or known not to have happened). Coalesced. */
  endIntent(mappingId: string, intentId: string): boolean {
    this.assertOpen();
    if (!this.state.mappings[mappingId]?.intents[intentId]) return false;
    this.commit(['endIntent', mappingId, intentId]);
    return true;
  }

  setRejected(mappingId: string, path: string, rejected: RejectedFile): void {
    this.need(mappingId);
    checkPath(mappingId, path);
    const c = checked(RejectedSchema, rejected);
    if (!c.ok) throw new TypeError(`state: rejected file ${JSON.stringify(path)} in mapping ${mappingId}: ${c.problem}`);
    this.commit(['reject', mappingId, path, c.value]);
  }

  clearRejected(mappingId: string, path: string): boolean {
    const m = this.need(mappingId);
    if (!(path in m.rejected)) return false;
    this.commit(['unreject', mappingId, path]);
    return true;
  }

  setLastPass(mappingId: string, pass: PassRecord): void {
    this.need(mappingId);
    const c = checked(PassRecordSchema, pass);
    if (!c.ok) throw new TypeError(`state: last pass of mapping ${mappingId}: ${c.problem}`);
    this.commit(['pass', mappingId, c.value]);
  }

  // ---- persistence -------------------------------------------------------------------

  /** Resolves when every mutation made before the call is on disk; rejects with StateWriteError. */
  flush(): Promise<void> {
    return this.scheduler.flush();
  }

  /**
   * Flushes (including mutations made while flushing), lets a fold in progress end, stops
   * the timers and releases the lock. Mutations after close() resolved throw. Rejects if
   * the last flush failed (the lock is released all the same).
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      try {
        for (let i = 0; i < 10 && this.pendingWrite; i++) await this.scheduler.flush();
      } finally {
        this.closed = true;
        this.scheduler.stop();
        await this.folding;
        await this.lock?.release();
      }
    })();
    return this.closing;
  }

  /**
   * Folds the journal into a new snapshot now (it happens by itself past the bound) and
   * resolves when done; a failure is logged and the journal keeps every change.
   */
  async fold(): Promise<void> {
    this.assertOpen();
    this.startFold();
    await this.folding;
  }

  // ---- internals ---------------------------------------------------------------------

  /** The one way the state changes: apply the op (memory and encoder), journal it, schedule the write. */
  private commit(op: StateOp): void {
    applyOp(this.state, this.codec, op);
    this.journal.add(op);
    if (IDENTITY_OPS.has(op[0])) this.identityDirty = true;
    this.scheduler.markDirty();
  }

  /**
   * At open: reads what the identity file holds and, when the state was rebuilt (corrupt or
   * missing), restores from it the identity, each mapping's data source and folder, and its
   * writer sessions; those mappings' documents are recognised again by the next sync
   * (needsRebuild). A state without the file writes it at its next durable write.
   */
  private async applyIdentityFile(idFile: { record?: IdentityRecord; problem?: string }, recovery: Omit<StateRecovery, 'identity' | 'mappings'> | undefined): Promise<void> {
    const { record, problem } = idFile;
    if (problem !== undefined) this.logger.warn({ file: this.identityPath, detail: problem }, `identity file ${this.identityPath} is unreadable (${problem}): ignored, and written again from the state`);
    if (recovery === undefined) {
      if (record) {
        for (const id of record.rebuild ?? []) if (this.state.mappings[id]) this.rebuild.add(id);
        this.identityText = encodeIdentityRecord(record);
        // A state that lost records the file holds (a journal emptied or cut short after a
        // snapshot: its identity, former ids, sessions) takes them back: used, never overwritten.
        if (this.state.identity === undefined || this.state.identity.installationId === record.installationId) this.restoreIdentityOf(record);
      }
      this.identityDirty = true;
      return;
    }
    if (record === undefined) {
      // A damaged journal may have kept the identity: its mappings' documents are recognised all the same.
      if (recovery.kind === 'damaged' && this.state.identity !== undefined) for (const id of Object.keys(this.state.mappings)) this.rebuild.add(id);
      this.identityDirty = true;
      this.recovery = { ...recovery, identity: problem !== undefined ? 'unreadable' : 'none', mappings: [...this.rebuild].sort() };
      if (recovery.kind !== 'missing' && this.state.identity === undefined) {
        this.logger.warn({ file: this.path, identityFile: this.identityPath }, `state file ${this.path} ${RECOVERY_WHY[recovery.kind](recovery.movedTo)}, and there is no identity file ${this.identityPath} to recover from: the rebuilt state starts under a new installation id, and the documents of the old one wait for 'dssync adopt' (docs/reliability.md, "Identity")`);
      }
      return;
    }
    for (const op of missingIdentityOps(this.state, record)) this.commit(op);
    // Every mapping the state now holds may lack documents: a damaged journal's too.
    for (const id of new Set([...Object.keys(record.mappings), ...(recovery.kind === 'damaged' ? Object.keys(this.state.mappings) : [])])) {
      if (this.state.mappings[id]) this.rebuild.add(id);
    }
    this.recovery = { ...recovery, identity: 'recovered', mappings: [...this.rebuild].sort() };
    const why = RECOVERY_WHY[recovery.kind](recovery.movedTo);
    this.logger.warn(
      { file: this.path, identityFile: this.identityPath, installationId: record.installationId, mappings: this.recovery.mappings },
      `state file ${this.path} ${why}: kept the installation's identity (${record.installationId}) and writer sessions from ${this.identityPath}; the next sync recognises this installation's documents from the listing (nothing is uploaded again)`,
    );
    // The rebuild is pending on disk before the state is: a crash before its records repeats it.
    this.identityDirty = true;
    await this.writeIdentity();
  }

  /** What the identity file holds and the state lacks (identity-file.ts missingIdentityOps); a mapping restored so is recognised again (needsRebuild). */
  private restoreIdentityOf(record: IdentityRecord): void {
    const had = new Set(Object.keys(this.state.mappings));
    const ops = missingIdentityOps(this.state, record);
    if (ops.length === 0) return;
    for (const op of ops) this.commit(op);
    for (const id of Object.keys(this.state.mappings)) if (!had.has(id)) this.rebuild.add(id);
    this.logger.warn({ file: this.path, identityFile: this.identityPath, installationId: record.installationId, restored: ops.map((o) => o[0]) }, `state file ${this.path} lacked what ${this.identityPath} holds of the installation's identity (${record.installationId}): kept from it`);
  }

  /** Rewrites the identity file when what it holds changed; a failure is logged, tried again at the next write. */
  private async writeIdentity(): Promise<void> {
    if (!this.identityDirty) return;
    this.identityDirty = false;
    const record = identityRecordOf(this.state, this.rebuild);
    if (record === undefined) return;
    const text = encodeIdentityRecord(record);
    if (text === this.identityText) return;
    try {
      await writeFileAtomic(this.fs, this.identityPath, [Buffer.from(text, 'utf8')]);
      this.identityText = text;
    } catch (err) {
      this.identityDirty = true;
      this.logger.warn({ file: this.identityPath, errno: errnoOf(err) }, `identity file ${this.identityPath} could not be written (${(err as Error).message}); trying again at the next state write`);
    }
  }

  /** One durable write: the ops made since the last one, appended to the journal. */
  private async writeNow(): Promise<void> {
    const t0 = performance.now();
    try {
      if (!this.snapshotCurrent) {
        this.startFold();
        await this.folding;
        if (!this.snapshotCurrent) throw new Error(`the state snapshot ${this.path} could not be written before the journal's first record in this format`);
      }
      const r = await this.journal.append(() => performance.now());
      await this.writeIdentity();
      if (this.journal.lostFiles) {
        // The directory was emptied under us: the journal alone no longer holds the state.
        this.logger.warn({ file: this.path }, `state files under ${dirname(this.path)} vanished: writing the whole state again`);
        this.startFold();
        await this.folding;
        if (this.journal.lostFiles) throw new Error('the state could not be written again after its files vanished');
      }
      this.stats.writes++;
      this.stats.lastBytes = r.bytes;
      this.stats.lastEncodeMs = r.encodeMs;
      this.stats.lastMaxBlockMs = r.encodeMs;
      this.stats.lastWriteMs = performance.now() - t0;
    } catch (err) {
      this.stats.failures++;
      throw err instanceof StateWriteError ? err : new StateWriteError(this.path, err);
    }
    this.maybeFold();
  }

  private foldBound(): number {
    const snapshotBytes = this.snapshotFile.stats.writes > 0 ? this.snapshotFile.stats.lastBytes : (this.snapshotFile.readStats?.bytes ?? 0);
    return Math.max(this.foldMinBytes, Math.floor(snapshotBytes / 4), this.foldBlockedBelow);
  }

  private maybeFold(): void {
    if (!this.folding && !this.closed && this.journal.bytes >= this.foldBound()) this.startFold();
  }

  /**
   * Folds the journal into a new snapshot, in the background. Every op applied so far is in
   * the snapshot (taken synchronously in SnapshotFile.write), and it says so (journalSeq); the
   * journal keeps the records appended meanwhile, and is cut to them once the snapshot is
   * durable. A crash at any point leaves a snapshot and a journal whose later ops complete it.
   */
  private startFold(): void {
    if (this.folding) return;
    const run = async (): Promise<void> => {
      const seq = this.journal.lastSeq;
      this.state.journalSeq = seq;
      this.journal.keepTail();
      try {
        await this.snapshotFile.write(this.state, () => this.journal.settled());
      } catch (err) {
        this.journal.dropTail();
        throw err;
      }
      await this.journal.trim();
      this.journal.dropPendingThrough(seq);
    };
    this.folding = run()
      .then(
        () => {
          this.foldBlockedBelow = 0;
          this.snapshotCurrent = true;
          const st = this.snapshotFile.stats;
          this.logger.debug({ file: this.path, bytes: st.lastBytes, ms: st.lastWriteMs, maxBlockMs: st.lastMaxBlockMs }, 'state journal folded into a new snapshot');
        },
        (err: unknown) => {
          this.foldBlockedBelow = this.journal.bytes + this.foldMinBytes;
          this.logger.warn({ file: this.path, err }, `state snapshot ${this.path} could not be written (the journal keeps every change): ${(err as Error).message}`);
        },
      )
      .finally(() => {
        this.folding = undefined;
      });
  }

  private need(mappingId: string): MappingState {
    this.assertOpen();
    const m = this.state.mappings[mappingId];
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
  try {
    // A daemon may fold between our reads of the snapshot and of the journal (the journal
    // then starts after the snapshot we read): read both again.
    for (let attempt = 1; ; attempt++) {
      const snapshot = new SnapshotFile(abs, fs, new StateCodec());
      const state = (await snapshot.read()) ?? newState();
      try {
        const loaded = await loadJournal(fs, journalPathOf(abs), state, undefined, { withSnapshot: snapshot.readStats !== undefined });
        return snapshot.readStats || loaded.exists ? state : undefined;
      } catch (err) {
        if (!(err instanceof StateCorruptError && err.detail.startsWith(JOURNAL_GAP)) || attempt >= 3) throw err;
      }
    }
  } catch (err) {
    throw readFailure(abs, err);
  }
}

/** A failed read as thrown: a state error or a bug as it is, an errno as a StateReadError. */
function readFailure(file: string, err: unknown): unknown {
  return isStateError(err) || errnoOf(err) === undefined ? err : new StateReadError(file, err);
}

const JOURNAL_GAP = 'the journal resumes at op';

interface Loaded {
  /** The last op's sequence number (the snapshot's or the journal's). */
  lastSeq: number;
  /** Size of the journal's valid part. */
  bytes: number;
  exists: boolean;
  replayed: number;
  /** Valid records read. */
  records: number;
  /** An incomplete last record (a write cut short by a crash): the valid part's size, and what was wrong. */
  torn?: { valid: number; problem: string };
  /** Damage (journal.ts): the file as it was, and what was lost. */
  damage?: JournalDamage;
}

/** A damaged journal: its bytes as read (kept as a copy), and what was lost. */
export interface JournalDamage {
  bytes: Buffer;
  /** The damaged byte ranges, with why each is no record. */
  ranges: string[];
  /** Ops known lost (sequence numbers between the records around a damaged range), as "a-b". */
  lostOps: string[];
  /** Bytes of the damaged ranges. */
  lostBytes: number;
}

/**
 * Replays onto `state` the journal's ops that came after its snapshot. Throws
 * StateCorruptError when the journal does not follow the snapshot (an op is missing) where
 * no damage explains it, StateVersionError when a record is of a newer state format. Past a
 * damaged range, `seed` (the identity file's) restores first the identity and mappings the
 * damage took, so that the records after it apply.
 */
async function loadJournal(
  fs: StateFs,
  journalPath: string,
  state: StateFile,
  codec: StateCodec | undefined,
  { withSnapshot, seed }: { withSnapshot: boolean; seed?: IdentityRecord | undefined },
): Promise<Loaded> {
  const buf = await readBytesIfExists(fs, journalPath);
  if (buf === undefined) return { lastSeq: state.journalSeq, bytes: 0, exists: false, replayed: 0, records: 0 };
  const parsed = parseJournal(buf, withSnapshot);
  if (parsed.newerFormat !== undefined) throw new StateVersionError(journalPath, parsed.newerFormat, STATE_VERSION);
  let applied = state.journalSeq;
  let replayed = 0;
  let crossed = 0;
  const lostOps: string[] = [];
  const damaged = parsed.damaged;
  const seedLost = (): void => void (seed && missingIdentityOps(state, seed).forEach((op) => applyOp(state, codec, op)));
  for (const rec of parsed.records) {
    const afterDamage = damaged.filter((d) => d.to <= rec.at).length;
    if (afterDamage > crossed) {
      if (crossed === 0) seedLost();
      crossed = afterDamage;
      if (rec.first > applied + 1) {
        lostOps.push(`${applied + 1}-${rec.first - 1}`);
        applied = rec.first - 1;
      }
    }
    if (rec.first > applied + 1) {
      throw new StateCorruptError(journalPath, `${JOURNAL_GAP} ${rec.first} while its snapshot ends at op ${applied}`);
    }
    for (let i = 0; i < rec.ops.length; i++) {
      if (rec.first + i <= applied) continue; // already in the snapshot (or written twice after a failed append)
      applyOp(state, codec, rec.ops[i] as StateOp);
      applied++;
      replayed++;
    }
  }
  if (damaged.length > 0 && crossed === 0) seedLost();
  const loaded: Loaded = { lastSeq: applied, bytes: parsed.validBytes, exists: true, replayed, records: parsed.records.length };
  if (parsed.torn !== undefined) loaded.torn = { valid: parsed.validBytes, problem: parsed.torn };
  if (damaged.length > 0) {
    if (damaged.at(-1)?.to === buf.length) lostOps.push(`${applied + 1}-?`);
    loaded.damage = { bytes: buf, ranges: damaged.map((d) => `bytes ${d.from}-${d.to}: ${d.problem}`), lostOps, lostBytes: damaged.reduce((n, d) => n + d.to - d.from, 0) };
  }
  return loaded;
}

function checkPath(mappingId: string, path: string): void {
  if (typeof path !== 'string' || path === '') throw new TypeError(`state: empty or invalid file path in mapping ${mappingId}`);
}

function checkEntry(mappingId: string, path: string, entry: FileEntry): void {
  checkPath(mappingId, path);
  const problem = fileEntryProblem(entry);
  if (problem) throw new TypeError(`state: file entry of ${JSON.stringify(path)} in mapping ${mappingId}: ${problem}`);
}

/**
 * `<prefix>-2026-11-22T02-14-28-123Z` (sortable, and valid in a file name everywhere) for a
 * file set aside, never the name of one already there: an earlier copy is never overwritten,
 * though the wall clock may come back to its instant (a step back) — then `-2`, `-3`, … follow.
 */
async function asideName(fs: StateFs, prefix: string, ms: number): Promise<string> {
  const name = `${prefix}-${new Date(ms).toISOString().replace(/[:.]/g, '-')}`;
  for (let n = 1; ; n++) {
    const candidate = n === 1 ? name : `${name}-${n}`;
    if ((await unlessMissing(fs.stat(candidate))) === undefined) return candidate;
  }
}
