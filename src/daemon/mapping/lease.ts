/**
 * A mapping's lease at run time (engine/lease.ts is the rule): finds or makes the marker
 * document, claims it, renews it, watches it as a standby, releases it on a graceful stop.
 * Used by the daemon's pass loop and by `dssync sync`. Every request goes through the
 * mapping's client (its pacer); every wait through the one clock.
 */
import { writeFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { DatastoreApi } from '../../api/api.js';
import { unlessGone } from '../../api/errors.js';
import { testLeaseSettleMs } from '../../test-hooks.js';
import { LEASE, leaseTimingSettling, LeaseCore, leaseDocumentBody, sameLeaseRecord, leaseDocumentName, leaseMarkersOf, leaseMetadata, leaseRecordOf, pickMarker, type HostProbe, type LeaseHolder, type LeaseMarker, type LeaseRecord } from '../../engine/lease.js';
import type { LeaseView } from '../../engine/lease-view.js';
import type { Logger } from '../../log.js';
import type { Clock } from '../../time/clock.js';
import type { LeaseStatus } from '../status/schema.js';
import { newSession } from '../../engine/document-fields.js';
import { nodeLockProbe } from '../../state/lock.js';
import { listingBound } from '../../engine/listing-bound.js';
import { z } from 'zod';
import { SidecarFile } from '../sidecar-file.js';
import { openRegularFile } from '../../local/fs.js';
import { nodeStateFs, type StateFs } from '../../state/atomic-file.js';
import { testPause } from '../../test-hooks.js';
import { birthOutcome, type DataSourceBirth } from '../../engine/data-source.js';

export interface MappingLeaseDeps {
  api: DatastoreApi;
  dataSourceId: string;
  mappingId: string;
  /** This process, as its records name it. */
  holder: LeaseHolder;
  probe: HostProbe;
  clock: Clock;
  logger: Logger;
  /** Where the marker's body is written before its upload (beside the state). */
  bodyFile: string;
  /** The marker's address: a file URL in the mapped folder, the form the mapping's documents have. */
  url: string;
  /** Writes and removes that file (tests: in memory). */
  files?: { write(path: string, text: string): Promise<void>; remove(path: string): Promise<void> } | undefined;
  /** The lease was taken or lost (the pass loop starts or stops passes). */
  onChange?: ((held: boolean) => void) | undefined;
  timing?: typeof LEASE | undefined;
  /** How many files the mapping tracks: sizes the bound of the marker's search (listing-bound.ts). */
  filesTracked?: (() => number) | undefined;
  /** The marker's id as an earlier start found it (kept beside the state): one read instead of a listing. */
  memo?: MarkerMemo | undefined;
  /** The marker as this process read it while its state loaded (early-listing.ts): its id, without the memo's read. */
  early?: { documentId: string } | undefined;
  /** The data source is under its provisional name (engine/data-source.ts): the holder names it. */
  birth?: LeaseBirth | undefined;
}

/** A data source under its provisional name, as its lease names it. */
export interface LeaseBirth extends DataSourceBirth {
  /** Told when it gave way to the data source `to` (another process named its own so first) and was deleted. */
  gaveWay?: ((to: string) => void) | undefined;
}

/** Where the marker's id is kept between starts (MappingLeaseDeps.memo). */
export interface MarkerMemo {
  load(): Promise<string | undefined>;
  save(documentId: string): void;
}

export class MappingLease {
  private readonly core: LeaseCore;
  private readonly timing: typeof LEASE;
  private documentId: string | undefined;
  /** Markers a creation race left beside the chosen one: the holder deletes them. */
  private extras: string[] = [];
  /** Aborted by stop(): the loop's waits, and a step that has sent no record yet. */
  private controller = new AbortController();
  /** Aborted at stop()'s deadline: a claim or renewal already sent, then the release, end within it. */
  private sent = new AbortController();
  private loop: Promise<void> | undefined;
  /** The attempt in flight (read, claim, settle, confirming read), whether the loop's or acquire()'s. */
  private attempting: Promise<void> | undefined;
  private wasHeld = false;
  /** The session of the holder last logged, so that the log says it once. */
  private toldHolder: string | undefined;
  private lastError: string | undefined;
  private released = false;
  /** stop() has begun: a pass waiting for the claim (settled()) drops its reads. */
  private stopping = false;
  /** The attempt under way has read the marker (claimRead()): markRead says so, and whether it found the lease free. */
  private readDone: Promise<boolean> = Promise.resolve(false);
  private markRead = (_free: boolean): void => undefined;
  /** The record the last claim's read found free (claimReadShowed()). */
  private freeRead: LeaseRecord | undefined;
  /** The remembered marker was tried (once per process: after that the data source is listed). */
  private memoTried = false;
  /** The data source still has its provisional name: the holder names it (nameDataSource). */
  private birth: LeaseBirth | undefined;
  private naming: Promise<void> | undefined;
  /** The data source this one gave way to (it was deleted): nothing more is claimed here. */
  private gaveWayTo: string | undefined;
  /** A data source under its provisional name this process did not create had no marker: its creator's was awaited once (awaitCreator). */
  private creatorAwaited = false;

  constructor(private readonly d: MappingLeaseDeps) {
    this.timing = d.timing ?? LEASE;
    this.birth = d.birth;
    this.core = new LeaseCore({ ...d.holder, mappingId: d.mappingId }, d.probe, this.timing);
  }

  get dataSourceId(): string {
    return this.d.dataSourceId;
  }

  /** The writer session this process's records name (and its documents carry). */
  get session(): string {
    return this.d.holder.session;
  }

  /** Stopped (released): a later claim needs a new lease. */
  get stopped(): boolean {
    return this.released;
  }

  /** This process may write now. */
  holds(): boolean {
    return !this.released && !this.stopping && this.gaveWayTo === undefined && this.core.holds(this.d.clock.monotonic());
  }

  /** The data source still has its provisional name: why, when a request failed (else an empty string). */
  get unnamed(): string | undefined {
    return this.birth === undefined ? undefined : (this.lastError ?? '');
  }

  /** The data source this one gave way to (a creation race: it was deleted), if it did. */
  get gaveWay(): string | undefined {
    return this.gaveWayTo;
  }

  /**
   * Waits until a data source under its provisional name has its name (or gave way), trying
   * `attempts` times at most: true when it has it, false when it still has not (the lease
   * lost, stopped, or the renaming refused: the error says so in status()).
   */
  async named(attempts = 3): Promise<boolean> {
    for (let i = 0; i < attempts && this.birth !== undefined && this.holds(); i++) {
      if (i > 0) await this.d.clock.sleep(this.timing.checkMs, this.controller.signal).catch(() => undefined);
      await this.nameDataSource();
    }
    return this.birth === undefined && this.gaveWayTo === undefined;
  }

  /**
   * The lease as the owner rule reads it. While a claim is under way (claiming()), the view it
   * has once confirmed: a pass reads beside the claim's settle and plans only after settled()
   * says the lease is held, so a plan never stands on this view unless it came true.
   */
  view(): LeaseView {
    if (this.released) return { held: false };
    const mono = this.d.clock.monotonic();
    return !this.core.holds(mono) && this.claiming() ? { held: true } : this.core.view(mono);
  }

  /**
   * A claim is under way and no live holder stands against it (the last read showed none):
   * a pass may walk and list beside its settle wait, and plan after settled().
   */
  claiming(): boolean {
    return !this.released && !this.stopping && this.attempting !== undefined && this.core.standby === undefined;
  }

  /** Waits for the attempt under way, if any; true when this process holds the lease after it (and is not stopping it). */
  async settled(): Promise<boolean> {
    await this.attempting;
    return this.holds();
  }

  status(): LeaseStatus {
    const mono = this.d.clock.monotonic();
    if (this.holds()) return { state: 'held', since: this.core.since, documentId: this.documentId };
    const other = this.core.standby;
    if (other !== undefined) {
      return {
        state: 'standby',
        documentId: other.documentId,
        holder: { host: other.holder.host, session: other.holder.session, installationId: other.holder.installationId, since: other.holder.acquiredAt || undefined },
      };
    }
    return { state: this.released ? 'released' : this.core.atRisk(mono) ? 'at-risk' : 'acquiring', documentId: this.documentId, ...(this.lastError !== undefined ? { error: this.lastError } : {}) };
  }

  /** Keeps the lease from now on: claims it, renews it, or waits as a standby (again after a stop). */
  start(): void {
    if (this.released) {
      this.released = false;
      this.stopping = false;
      this.controller = new AbortController();
      this.sent = new AbortController();
      this.loop = undefined;
    }
    this.loop ??= this.run();
  }

  /** One attempt to take the lease (`dssync sync`); true when this process holds it after. */
  async acquire(): Promise<boolean> {
    await this.tryClaim();
    return this.holds();
  }

  /**
   * Stops keeping the lease; releases it when held (a graceful stop: a standby takes it at
   * once). A claim or renewal already sent ends first, so that no record of ours lands after
   * the release: a claim confirmed is then released like any hold, one that lost is left to
   * its winner. The whole stop takes at most LEASE.settleMs * 2.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    this.controller.abort();
    const deadline = this.d.clock.setTimeout(() => this.sent.abort(), this.timing.settleMs * 2);
    try {
      await this.loop?.catch(() => undefined);
      await this.attempting;
      const held = this.core.holds(this.d.clock.monotonic());
      this.released = true;
      this.changed();
      if (!held || this.documentId === undefined) return;
      try {
        await this.write(this.documentId, this.core.releasedRecord(this.d.clock.now()), this.sent.signal);
        this.d.logger.info({ documentId: this.documentId }, 'lease released');
      } catch (e) {
        this.d.logger.warn({ err: messageOf(e) }, `lease not released (it expires ${this.timing.durationMs / 1000} s after its last renewal)`);
      }
      this.core.lose();
    } finally {
      this.d.clock.clearTimeout(deadline);
    }
  }

  private async run(): Promise<void> {
    const signal = this.controller.signal;
    // Taken by acquire() just before: the first renewal is due an interval later.
    if (this.holds()) await this.d.clock.sleep(this.timing.renewMs, signal).catch(() => undefined);
    while (!signal.aborted && this.gaveWayTo === undefined) {
      if (this.holds()) await this.renew();
      else await this.tryClaim();
      if (this.holds() && this.birth !== undefined) void this.nameDataSource();
      this.changed();
      const wait = this.holds() ? this.timing.renewMs : this.timing.checkMs;
      await this.d.clock.sleep(wait, signal).catch(() => undefined);
    }
  }

  /** One attempt (attempt()), known as under way until it ends (claiming(), settled(), claimRead()). */
  private tryClaim(): Promise<void> {
    let readDone = (_free: boolean): void => undefined;
    this.readDone = new Promise<boolean>((resolve) => (readDone = resolve));
    this.markRead = readDone;
    const attempt: Promise<void> = this.attempt().finally(() => {
      readDone(false);
      if (this.attempting === attempt) this.attempting = undefined;
    });
    this.attempting = attempt;
    return attempt;
  }

  /**
   * Resolves once the claim under way has read the marker (or ended), at once when none is:
   * true when that read found no live holder (a claim follows) or the lease is held. A former
   * holder is free only as that read judged it (released, dead, expired), so its last writes
   * landed before it, and a listing begun after it shows them (docs/reliability.md, "Reading
   * while the claim settles").
   */
  claimRead(): Promise<boolean> {
    return this.attempting === undefined ? Promise.resolve(this.holds()) : this.readDone;
  }

  /**
   * The last claim's read found the lease free with exactly this record on the marker: no
   * claim, renewal or release was written between an earlier read that showed it and that
   * one (early-listing.ts).
   */
  claimReadShowed(record: LeaseRecord): boolean {
    return sameLeaseRecord(this.freeRead, record);
  }

  /** read -> claim -> settle -> read again (engine/lease.ts); a standby when another holds it. */
  private async attempt(): Promise<void> {
    const stopped = this.controller.signal;
    let signal = stopped;
    try {
      this.documentId ??= (await this.remembered(signal)) ?? (await this.discover(signal));
      if (this.documentId === undefined) return;
      if (this.holds()) return await this.taken(this.documentId, 'a new lease document', signal);
      const id = this.documentId;
      let readAt = this.d.clock.monotonic();
      let marker = await this.read(id, signal);
      if (marker === undefined) return;
      if (marker.record === undefined && this.birth?.fresh === false) {
        // Its creator's first claim, held without the settle, is written within claimLatencyMs
        // of a listing made before this marker existed: a marker still without a record one
        // settle wait after it was seen so is no creator's claim in flight (an earlier run's, lost).
        await this.d.clock.sleep(this.timing.settleMs, signal);
        readAt = this.d.clock.monotonic();
        marker = await this.read(id, signal);
        if (marker === undefined) return;
      }
      const j = this.core.judge(marker, readAt);
      this.freeRead = j.kind === 'free' ? marker.record : undefined;
      this.markRead(j.kind !== 'live');
      if (j.kind === 'live') {
        this.core.lose();
        if (this.toldHolder !== j.holder.session) {
          this.toldHolder = j.holder.session;
          this.d.logger.warn(
            { holderHost: j.holder.host, holderSession: j.holder.session, since: j.holder.acquiredAt, expiresInS: Math.ceil(j.expiresInMs / 1000) },
            `standby: the lease of mapping ${this.d.mappingId} is held by ${j.holder.host} (session ${j.holder.session}) since ${j.holder.acquiredAt}; nothing is written until it is released or expires`,
          );
        }
        return;
      }
      if (stopped.aborted) return;
      // Sent, the claim runs to its confirmation even through a stop (stop()).
      signal = this.sent.signal;
      const claimedAt = this.d.clock.monotonic();
      const claim = this.core.nextRecord(this.d.clock.now());
      if (!(await this.write(id, claim, signal))) return;
      if (!this.core.claimInTime(readAt, this.d.clock.monotonic())) {
        this.d.logger.info('lease claim took too long to be trusted; tried again');
        return;
      }
      await testPause('lease-claimed', id);
      await this.d.clock.sleep(this.timing.settleMs, signal);
      const after = await this.read(id, signal);
      if (after === undefined) return;
      if (this.core.confirm(after, claim, claimedAt, this.d.clock.monotonic())) await this.taken(id, j.kind === 'free' ? j.why : 'ours', signal);
    } catch (e) {
      if (signal.aborted) return;
      this.note(e);
    }
  }

  private async taken(id: string, why: string, signal: AbortSignal): Promise<void> {
    this.lastError = undefined;
    this.toldHolder = undefined;
    if (!this.wasHeld) this.d.logger.info({ documentId: id, why }, `lease of mapping ${this.d.mappingId} taken: this process writes`);
    await this.deleteExtras(signal);
    if (this.birth !== undefined) void this.nameDataSource();
  }

  /**
   * No marker on a data source under its provisional name this process did not create (reached
   * by id, or through a copy of its creator's state): its creator may not have made its marker
   * yet, and its first claim needs no settle wait. Nothing is made or claimed before the lease's
   * duration has passed with no marker of its creator's; that is awaited once per process.
   */
  private async awaitCreator(signal: AbortSignal): Promise<boolean> {
    if (this.birth === undefined || this.birth.fresh || this.creatorAwaited) return false;
    this.lastError = `the data source is being set up (its provisional name) and has no lease marker yet: its creator's claim is awaited ${this.timing.durationMs / 1000} s`;
    this.d.logger.info({ dataSourceId: this.d.dataSourceId }, this.lastError);
    await this.d.clock.sleep(this.timing.durationMs, signal);
    this.creatorAwaited = true;
    // Over: what the listing after it finds (a holder, or none) is the status from now on.
    this.lastError = undefined;
    return true;
  }

  /** One attempt at naming the data source (nameOnce), shared by whoever asks meanwhile. */
  private nameDataSource(): Promise<void> {
    this.naming ??= this.nameOnce()
      .catch((e: unknown) => {
        if (!this.controller.signal.aborted) this.note(e);
      })
      .finally(() => (this.naming = undefined));
    return this.naming;
  }

  /**
   * A data source under its provisional name takes its configured name once the lease holds
   * (engine/data-source.ts birthOutcome). A fresh one waits the service's answer time first,
   * so that whoever finds it by that name reads this process's claim; or it gives way to a
   * data source another process named so meanwhile, and is deleted with what was sent to it.
   */
  private async nameOnce(): Promise<void> {
    const birth = this.birth;
    const signal = this.controller.signal;
    if (birth === undefined) return;
    if (birth.fresh) await this.d.clock.sleep(this.timing.answerMs, signal);
    await testPause('data-source-naming', this.d.dataSourceId);
    if (!this.holds()) return;
    const outcome = birthOutcome(this.d.dataSourceId, birth.name, await this.d.api.listDataSources({ signal }));
    if (!this.holds()) return;
    if (outcome.kind === 'name') {
      await this.d.api.updateDataSource(this.d.dataSourceId, { name: birth.name }, { signal });
      this.birth = undefined;
      this.d.logger.info({ dataSourceId: this.d.dataSourceId, name: birth.name }, `data source named ${JSON.stringify(birth.name)}`);
      return;
    }
    if (birth.byId === true) {
      this.birth = undefined;
      this.d.logger.warn(
        { dataSourceId: this.d.dataSourceId, name: birth.name, to: outcome.to },
        `data source ${this.d.dataSourceId}, named by id in the config, keeps its provisional name: ${outcome.to} is named ${JSON.stringify(birth.name)}`,
      );
      return;
    }
    this.d.logger.warn(
      { dataSourceId: this.d.dataSourceId, name: birth.name, to: outcome.to },
      `another dssync created the data source ${JSON.stringify(birth.name)} (${outcome.to}) at the same time: this process's, ${this.d.dataSourceId}, is deleted with what it held, and the mapping mirrors into ${outcome.to}`,
    );
    await unlessGone(this.d.api.deleteDataSource(this.d.dataSourceId, { signal }));
    this.birth = undefined;
    this.gaveWayTo = outcome.to;
    this.core.lose();
    this.changed();
    birth.gaveWay?.(outcome.to);
  }

  private async renew(): Promise<void> {
    const id = this.documentId;
    if (id === undefined) return;
    const startedAt = this.d.clock.monotonic();
    if (await this.write(id, this.core.nextRecord(this.d.clock.now()), this.sent.signal).catch((e: unknown) => this.note(e))) this.core.renewed(startedAt);
    else if (this.core.atRisk(this.d.clock.monotonic())) {
      this.d.logger.error(`lease of mapping ${this.d.mappingId} not renewed for ${this.timing.atRiskMs / 1000} s: writes stopped until it is claimed again`);
    }
  }

  /**
   * The marker an earlier start found, when it is still this mapping's marker: every process
   * picks the same one (pickMarker), and a second is made only when a listing finds none, so
   * a remembered marker that still exists is the one a listing would pick.
   */
  private async remembered(signal: AbortSignal): Promise<string | undefined> {
    if (this.memoTried) return undefined;
    if (this.d.early !== undefined) {
      this.memoTried = true;
      return this.d.early.documentId;
    }
    if (this.d.memo === undefined) return undefined;
    const id = await this.d.memo.load();
    const doc = id === undefined ? undefined : await unlessGone(this.d.api.getDocument(this.d.dataSourceId, id, { signal }));
    this.memoTried = true;
    return doc !== undefined && leaseMarkersOf([doc], this.d.mappingId).length > 0 ? id : undefined;
  }

  /**
   * The marker's id: the one every process picks, made when there is none. A marker this
   * process makes carries its claim at once (the listing that found none is the claim's
   * read, docs/reliability.md "The lease"): the listing after the settle wait confirms it
   * when the marker picked is this one and still shows the claim.
   */
  private async discover(signal: AbortSignal): Promise<string | undefined> {
    let listedAt = this.d.clock.monotonic();
    let markers = await this.list(signal);
    let claim: { id: string; record: LeaseRecord; at: number } | undefined;
    if (markers.length === 0 && (await this.awaitCreator(signal))) {
      listedAt = this.d.clock.monotonic();
      markers = await this.list(signal);
    }
    if (markers.length === 0) {
      // No marker: no holder, and this listing is the claim's read.
      this.markRead(true);
      const made = await this.make(signal);
      if (made !== undefined && this.core.claimInTime(listedAt, this.d.clock.monotonic()) && !signal.aborted) {
        // Sent, the claim runs to its confirmation even through a stop (stop()).
        signal = this.sent.signal;
        const at = this.d.clock.monotonic();
        const record = this.core.nextRecord(this.d.clock.now());
        if ((await this.write(made, record, signal)) && this.core.claimInTime(listedAt, this.d.clock.monotonic())) claim = { id: made, record, at };
        await testPause('lease-claimed', made);
        if (claim !== undefined && this.birth?.fresh === true) {
          // Nobody else can know this data source (its provisional name): no rival's claim or marker to wait for.
          this.core.confirm({ documentId: claim.id, record: claim.record }, claim.record, claim.at, this.d.clock.monotonic());
          this.d.memo?.save(claim.id);
          return claim.id;
        }
      }
      // Two processes that both found none each made one: after the settle wait, both see both.
      await this.d.clock.sleep(this.timing.settleMs, signal);
      markers = await this.list(signal);
    }
    const chosen = pickMarker(markers);
    if (chosen === undefined) throw new Error('the lease document just made is not in the listing');
    this.extras = markers.filter((m) => m.documentId !== chosen.documentId).map((m) => m.documentId);
    this.d.memo?.save(chosen.documentId);
    if (claim?.id === chosen.documentId) this.core.confirm(chosen, claim.record, claim.at, this.d.clock.monotonic());
    return chosen.documentId;
  }

  /** Uploads a new marker; its id, when the answer names it. */
  private async make(signal: AbortSignal): Promise<string | undefined> {
    const name = leaseDocumentName(this.d.mappingId);
    const files = this.d.files ?? nodeFiles;
    await files.write(this.d.bodyFile, leaseDocumentBody(this.d.mappingId));
    try {
      const [doc] = await this.d.api.uploadDocuments(this.d.dataSourceId, [{ path: this.d.bodyFile, name, contentType: 'text/plain', open: () => openRegularFile(this.d.bodyFile) }], { signal });
      return doc?.id;
    } finally {
      await files.remove(this.d.bodyFile);
    }
  }

  private async list(signal: AbortSignal): Promise<LeaseMarker[]> {
    // Bounded as the mirror's own listing is (listing-bound.ts): an endless listing never holds the lease's search.
    const docs = await this.d.api.listDocuments(this.d.dataSourceId, { signal, form: 'sync', keep: (doc) => leaseMarkersOf([doc], this.d.mappingId).length > 0, ...listingBound(this.d.filesTracked?.() ?? 0) });
    return leaseMarkersOf(docs, this.d.mappingId);
  }

  /** The marker, or undefined when it is gone (found again at the next attempt). */
  private async read(id: string, signal: AbortSignal): Promise<LeaseMarker | undefined> {
    const doc = await unlessGone(this.d.api.getDocument(this.d.dataSourceId, id, { signal }));
    if (doc === undefined) this.gone();
    return doc && { documentId: id, record: leaseRecordOf(doc) };
  }

  /** Writes a record; false when the marker is gone (deleted in the App). */
  private async write(id: string, record: LeaseRecord, signal: AbortSignal): Promise<boolean> {
    const answer = await unlessGone(this.d.api.updateDocument(this.d.dataSourceId, id, { name: leaseDocumentName(this.d.mappingId), url: this.d.url, metadata: leaseMetadata(record) }, { signal }));
    if (answer === undefined) this.gone();
    return answer !== undefined;
  }

  private async deleteExtras(signal: AbortSignal): Promise<void> {
    for (const id of this.extras) {
      await this.d.api.deleteDocument(this.d.dataSourceId, id, { signal });
      this.d.logger.info({ documentId: id }, 'deleted a second lease document (a creation race)');
    }
    this.extras = [];
  }

  private gone(): void {
    this.d.logger.warn({ documentId: this.documentId }, 'the lease document is gone (deleted in the App?): looked up again');
    this.documentId = undefined;
    this.core.lose();
  }

  private note(e: unknown): false {
    this.lastError = messageOf(e);
    this.d.logger.warn({ err: this.lastError }, 'lease request failed; tried again');
    return false;
  }

  private changed(): void {
    const held = this.holds();
    if (held === this.wasHeld) return;
    this.wasHeld = held;
    this.d.onChange?.(held);
  }
}

/** What makes a mapping's lease: the same for every mapping of a process, but its data source. */
export interface LeaseSettings {
  api: DatastoreApi;
  mappingId: string;
  /** The marker's body is written beside it before its upload. */
  statePath: string;
  /** The mapped folder: the marker's address names a file in it (that is never there). */
  root: string;
  clock: Clock;
  logger: Logger;
  probe?: HostProbe | undefined;
  timing?: typeof LEASE | undefined;
  /** How many files the mapping tracks (MappingLeaseDeps.filesTracked). */
  filesTracked?: (() => number) | undefined;
  /** Where the marker's body is written (MappingLeaseDeps.files; the simulation's is in memory). */
  files?: MappingLeaseDeps['files'];
  /** The disk of the marker's id kept beside the state (the state's own: the simulation's is in memory). */
  stateFs?: StateFs | undefined;
  /** This process's id in the lease's record (default process.pid; the simulation's processes have their own). */
  pid?: number | undefined;
  /** The marker read while the state loaded, for this data source (MappingLeaseDeps.early). */
  early?: { documentId: string } | undefined;
}

/** The timing a test asked for (test-hooks.ts `lease-settle-ms`), or undefined: the real one. */
function testTiming(): typeof LEASE | undefined {
  const settleMs = testLeaseSettleMs();
  return settleMs === undefined ? undefined : leaseTimingSettling(settleMs);
}

/** A mapping's lease for a data source, this process its would-be holder (a new writer session). */
export function mappingLease(s: LeaseSettings, dataSourceId: string, installationId: string, onChange?: (held: boolean) => void, birth?: LeaseBirth): MappingLease {
  const probe = s.probe ?? nodeLockProbe;
  const pid = s.pid ?? process.pid;
  return new MappingLease({
    api: s.api,
    dataSourceId,
    mappingId: s.mappingId,
    holder: { installationId, session: newSession(), host: probe.hostname, boot: probe.bootId, pid, procStart: probe.procStart(pid) },
    probe,
    clock: s.clock,
    logger: s.logger,
    bodyFile: `${s.statePath}.lease-${pid}.txt`,
    url: pathToFileURL(join(s.root, leaseDocumentName(s.mappingId))).href,
    onChange,
    timing: s.timing ?? testTiming(),
    filesTracked: s.filesTracked,
    files: s.files,
    memo: markerMemo(memoFile(s.statePath, s.mappingId, s.logger, s.stateFs), dataSourceId),
    early: s.early,
    birth,
  });
}

const MemoSchema = z.object({ dataSourceId: z.string(), documentId: z.string() });

/** The file beside the state that keeps a mapping's marker id and its data source's. */
function memoFile(statePath: string, mappingId: string, logger: Logger, fs: StateFs = nodeStateFs): SidecarFile<z.infer<typeof MemoSchema>> {
  return new SidecarFile(`${statePath}.lease-${encodeURIComponent(mappingId)}.json`, MemoSchema, {
    unreadable: 'lease marker id unreadable: the data source is listed to find the marker',
    malformed: 'lease marker id malformed: the data source is listed to find the marker',
    unwritable: 'lease marker id not kept: the next start lists the data source to find the marker',
  }, logger, fs);
}

/** The marker's id and its data source as the last start kept them (early-listing.ts), undefined when none is kept. */
export function rememberedMarker(statePath: string, mappingId: string, logger: Logger): Promise<z.infer<typeof MemoSchema> | undefined> {
  return memoFile(statePath, mappingId, logger).load();
}

/** The marker's id in a file beside the state, for this data source only (a data source made anew has another marker). */
function markerMemo(file: SidecarFile<z.infer<typeof MemoSchema>>, dataSourceId: string): MarkerMemo {
  return {
    load: async () => {
      const memo = await file.load();
      return memo?.dataSourceId === dataSourceId ? memo.documentId : undefined;
    },
    save: (documentId) => void file.save(() => ({ dataSourceId, documentId })),
  };
}

const nodeFiles = {
  write: (path: string, text: string): Promise<void> => writeFile(path, text, { mode: 0o600 }),
  remove: (path: string): Promise<void> => rm(path, { force: true }),
};

function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
