/**
 * A mapping's lease (DESIGN §7, docs/reliability.md "The lease"), the pure core: what a read
 * of the lease's marker document means, and whether this process may write.
 *
 * The lease is a marker document of the data source (lease-view.ts names it). The service
 * has no compare-and-swap, so a claim is read -> write our record -> wait past the service's
 * answer time (LEASE.settleMs) -> read again: the holder is whoever the second read shows.
 * A claim whose write ended more than LEASE.claimLatencyMs after the read it was decided on
 * is not trusted (a rival's read and write fit inside the settle wait only when both are
 * that quick).
 *
 * Expiry is judged on the observer's own monotonic clock, as client-go's leader election
 * does: a record that has not changed for its duration, as this process saw it, has expired.
 * No two hosts' clocks are ever compared. A record written by a process of this same host
 * and boot that is no longer running is a dead predecessor's: free at once.
 *
 * The holder renews every LEASE.renewMs; it stops writing LEASE.atRiskMs after the start of
 * its last renewal that succeeded, one renewal interval before any observer can judge the
 * lease expired (an observer first saw that record at the earliest when its write began).
 */
import type { DocumentRecord } from '../api/records.js';
import { isLeaseDocument, LEASE_META_KEY, LEASE_NAME_PREFIX, type LeaseView } from './lease-view.js';
import { learnNameRule } from './service-names.js';

/** The lease's timings (ms), one place. */
export const LEASE = {
  /** A record unchanged for this long, as an observer saw it, has expired. */
  durationMs: 60_000,
  /** The holder writes a new record this often. */
  renewMs: 15_000,
  /** A standby reads the marker this often (a released or expired lease is taken at the next read). */
  checkMs: 10_000,
  /** A claim written later than this after the read it was decided on is not trusted. */
  claimLatencyMs: 2_000,
  /** The wait between a claim and the read that confirms it: past any rival's read and write. */
  settleMs: 3_000,
  /** What the settle wait allows beyond a rival's read and write: the service's answer time (a write seen by every later read). */
  get answerMs(): number {
    return this.settleMs - this.claimLatencyMs;
  },
  /** The holder stops writing this long after the start of its last successful renewal. */
  get atRiskMs(): number {
    return this.durationMs - this.renewMs;
  },
} as const;

/**
 * The lease's timing with another settle wait (a test's: src/test-hooks.ts), keeping its rule:
 * a claim is trusted only when written within two thirds of the settle that confirms it.
 */
export function leaseTimingSettling(settleMs: number): typeof LEASE {
  return Object.create(LEASE, { settleMs: { value: settleMs }, claimLatencyMs: { value: Math.floor((settleMs * 2) / 3) } }) as typeof LEASE;
}

/** Who a process is, as its lease record says (the record's holder fields). */
export interface LeaseHolder {
  /** The installation id (the same in every replica of a pinned id). */
  installationId: string;
  /** The writer session of the process: what the documents it writes carry. */
  session: string;
  host: string;
  /** The host's boot id (Linux), undefined elsewhere. */
  boot?: string | undefined;
  pid: number;
  /** The process's start time (/proc/<pid>/stat), undefined where unknown. */
  procStart?: string | undefined;
}

/** What a marker document's metadata holds. */
export interface LeaseRecord extends LeaseHolder {
  mappingId: string;
  /** Changes at each renewal: an observer that sees the same value saw no renewal. */
  renew: number;
  durationMs: number;
  /** When the holder took the lease (its wall clock): display only. */
  acquiredAt: string;
  /** Released by a graceful stop: free at once. */
  released: boolean;
}

export interface LeaseMarker {
  documentId: string;
  /** Undefined when the document carries no readable record (just created, or edited by someone). */
  record: LeaseRecord | undefined;
}

/** The name of a mapping's marker document. */
export function leaseDocumentName(mappingId: string): string {
  return `${LEASE_NAME_PREFIX}-${mappingId.replace(/[^A-Za-z0-9._-]/g, '_')}.txt`;
}

/** What the marker's body tells a person who finds it in the App. */
export function leaseDocumentBody(mappingId: string): string {
  return (
    `dssync lease of mapping ${mappingId}.\n` +
    'This small document tells the dssync processes mirroring a folder into this data source which one of them may write. ' +
    'It is kept up to date by dssync and holds no content of the folder. Deleting it is harmless: dssync makes it again.\n'
  );
}

/** The metadata of a record (strings only: what every service keeps as written). */
export function leaseMetadata(r: LeaseRecord): Record<string, string> {
  return {
    [LEASE_META_KEY]: r.mappingId,
    dssync_lease_installation: r.installationId,
    dssync_lease_session: r.session,
    dssync_lease_host: r.host,
    ...(r.boot !== undefined ? { dssync_lease_boot: r.boot } : {}),
    dssync_lease_pid: String(r.pid),
    ...(r.procStart !== undefined ? { dssync_lease_proc_start: r.procStart } : {}),
    dssync_lease_renew: String(r.renew),
    dssync_lease_duration_ms: String(r.durationMs),
    dssync_lease_acquired_at: r.acquiredAt,
    dssync_lease_released: r.released ? 'true' : 'false',
  };
}

/** The record a marker document carries, undefined when it has none (or an unreadable one). */
export function leaseRecordOf(doc: Pick<DocumentRecord, 'metadata'>): LeaseRecord | undefined {
  const m = doc.metadata;
  if (m === undefined || m === null || typeof m !== 'object') return undefined;
  const s = (k: string): string | undefined => {
    const v = (m as Record<string, unknown>)[k];
    return typeof v === 'string' ? v : typeof v === 'number' ? String(v) : undefined;
  };
  const mappingId = s(LEASE_META_KEY);
  const installationId = s('dssync_lease_installation');
  const session = s('dssync_lease_session');
  const host = s('dssync_lease_host');
  const pid = Number(s('dssync_lease_pid'));
  const renew = Number(s('dssync_lease_renew'));
  const durationMs = Number(s('dssync_lease_duration_ms'));
  if (mappingId === undefined || installationId === undefined || session === undefined || host === undefined) return undefined;
  if (!Number.isSafeInteger(pid) || !Number.isSafeInteger(renew) || !Number.isFinite(durationMs) || durationMs <= 0) return undefined;
  return {
    mappingId,
    installationId,
    session,
    host,
    boot: s('dssync_lease_boot'),
    pid,
    procStart: s('dssync_lease_proc_start'),
    renew,
    durationMs,
    acquiredAt: s('dssync_lease_acquired_at') ?? '',
    released: s('dssync_lease_released') === 'true',
  };
}

/** The mapping's marker documents of a listing. */
export function leaseMarkersOf(docs: readonly DocumentRecord[], mappingId: string): LeaseMarker[] {
  const out: LeaseMarker[] = [];
  for (const doc of docs) {
    if (!isLeaseDocument(doc)) continue;
    const record = leaseRecordOf(doc);
    // Another mapping's marker (a data source shared by two configs) is not ours to judge.
    if (record !== undefined && record.mappingId !== mappingId) continue;
    if (record === undefined && !isMarkerName(doc.name ?? '', mappingId)) continue;
    out.push({ documentId: doc.id, record });
  }
  return out;
}

/**
 * A record-less marker (just made: its first claim writes its metadata) is this mapping's
 * when its name is the one sent, or what a service that rewrites names (service-names.ts:
 * lower-cased, extension dropped, a suffix, cut) stores of it. A suffix that could continue
 * a mapping id is another mapping's name (".dssync-lease-a" vs ".dssync-lease-ab").
 */
export function isMarkerName(name: string, mappingId: string): boolean {
  const sent = leaseDocumentName(mappingId);
  if (name === sent) return true;
  const rule = learnNameRule(sent, name);
  return rule !== undefined && (rule.suffix === undefined || !/^[A-Za-z0-9._-]/.test(rule.suffix));
}

/**
 * The one marker every process uses when a creation race left several: the lowest document
 * id among those carrying a record (else the lowest). Every process that lists the same
 * documents picks the same one; the holder deletes the others.
 */
export function pickMarker(markers: readonly LeaseMarker[]): LeaseMarker | undefined {
  const byId = [...markers].sort((a, b) => (a.documentId < b.documentId ? -1 : a.documentId > b.documentId ? 1 : 0));
  return byId.find((m) => m.record !== undefined) ?? byId[0];
}

/** What this machine can tell of a process of its own (a seam: state/lock.ts's LockProbe fits). */
export interface HostProbe {
  hostname: string;
  bootId: string | undefined;
  alive(pid: number): boolean;
  procStart(pid: number): string | undefined;
}

/** A record's holder is a process of this host and boot that is no longer running. */
export function isDeadPredecessor(r: LeaseHolder, probe: HostProbe): boolean {
  if (r.host !== probe.hostname || r.boot === undefined || r.boot !== probe.bootId) return false;
  if (!probe.alive(r.pid)) return true;
  const start = probe.procStart(r.pid);
  return r.procStart !== undefined && start !== undefined && r.procStart !== start;
}

/**
 * A record whose holder can write nothing more, whoever reads it and whenever: released, or
 * a dead predecessor's. (Expiry needs a watch of the record; this needs none.)
 */
export function heldByNoOne(r: LeaseRecord, probe: HostProbe): boolean {
  return r.released || isDeadPredecessor(r, probe);
}

/** Two reads of the marker showed the same record: no claim, renewal or release was written between them. */
export function sameLeaseRecord(a: LeaseRecord | undefined, b: LeaseRecord | undefined): boolean {
  return a !== undefined && b !== undefined && JSON.stringify(leaseMetadata(a)) === JSON.stringify(leaseMetadata(b));
}

/** What a read of the marker says. */
export type LeaseJudgement =
  /** Nobody holds it: no marker, no record, released, expired as observed, or a dead predecessor's. */
  | { kind: 'free'; why: string }
  /** The record is this process's. */
  | { kind: 'ours' }
  /** Another process holds it and is live, as far as this process can tell. */
  | { kind: 'live'; holder: LeaseRecord; expiresInMs: number };

/** Why this process is not writing, as status shows it. */
export interface LeaseStandby {
  holder: LeaseRecord;
  /** The marker document. */
  documentId: string;
}

/**
 * One process's view of one mapping's lease: its observations of the marker (first seen,
 * monotonic), its own hold, and the judgement of each read. Time is passed in (monotonic ms).
 */
export class LeaseCore {
  /** The record last seen, and when it was first seen so (this process's monotonic clock). */
  private observed: { documentId: string; key: string; since: number } | undefined;
  /** This process's hold: the start of its last successful claim or renewal. */
  private heldSince: number | undefined;
  private renewCount = 0;
  private acquiredAt: string | undefined;
  /** The live holder the last read showed, when it was another process. */
  private other: LeaseStandby | undefined;

  constructor(
    readonly me: LeaseHolder & { mappingId: string },
    private readonly probe: HostProbe,
    private readonly timing: Pick<typeof LEASE, 'durationMs' | 'atRiskMs' | 'claimLatencyMs'> = LEASE,
  ) {}

  /** Judges a read of the marker made at `readAt`. */
  judge(marker: LeaseMarker | undefined, readAt: number): LeaseJudgement {
    if (marker === undefined) return this.free('no lease document');
    const r = marker.record;
    if (r === undefined) return this.free('the lease document holds no record');
    if (r.session === this.me.session) {
      this.other = undefined;
      return { kind: 'ours' };
    }
    if (r.released) return this.free(`released by ${r.host} (session ${r.session})`);
    if (isDeadPredecessor(r, this.probe)) return this.free(`its holder, process ${r.pid} of this host, is no longer running`);
    const key = `${r.session}/${r.renew}/${r.released}`;
    if (this.observed?.documentId !== marker.documentId || this.observed.key !== key) this.observed = { documentId: marker.documentId, key, since: readAt };
    const age = readAt - this.observed.since;
    if (age >= r.durationMs) return this.free(`not renewed by ${r.host} (session ${r.session}) for ${Math.round(age / 1000)} s as this process saw it`);
    this.other = { holder: r, documentId: marker.documentId };
    return { kind: 'live', holder: r, expiresInMs: r.durationMs - age };
  }

  private free(why: string): LeaseJudgement {
    this.other = undefined;
    return { kind: 'free', why };
  }

  /** The record to write for a claim (renew: the next count) or a renewal. */
  nextRecord(wallNow: number): LeaseRecord {
    this.renewCount++;
    return { ...this.me, renew: this.renewCount, durationMs: this.timing.durationMs, acquiredAt: this.acquiredAt ?? new Date(wallNow).toISOString(), released: false };
  }

  /** The record of a graceful release. */
  releasedRecord(wallNow: number): LeaseRecord {
    return { ...this.nextRecord(wallNow), released: true };
  }

  /** A claim written between `readAt` and `writtenAt` may be confirmed: false when it took too long. */
  claimInTime(readAt: number, writtenAt: number): boolean {
    return writtenAt - readAt <= this.timing.claimLatencyMs;
  }

  /**
   * The read after the settle wait: the claim `claimed` (its renew count) holds when the
   * marker still shows it. Holds from `claimStartedAt` (the start of the claim's write).
   */
  confirm(marker: LeaseMarker | undefined, claimed: LeaseRecord, claimStartedAt: number, readAt: number): boolean {
    const j = this.judge(marker, readAt);
    if (j.kind === 'ours' && marker?.record?.renew === claimed.renew) {
      this.heldSince = claimStartedAt;
      this.acquiredAt = claimed.acquiredAt;
      return true;
    }
    this.lose();
    return false;
  }

  /** A renewal that began at `startedAt` succeeded. */
  renewed(startedAt: number): void {
    if (this.heldSince !== undefined) this.heldSince = Math.max(this.heldSince, startedAt);
  }

  /** The hold ends (released, taken, or at risk): the next hold is a new claim. */
  lose(): void {
    this.heldSince = undefined;
    this.acquiredAt = undefined;
  }

  /** Whether this process may write at `now`: it holds the lease and is not at risk of expiry. */
  holds(now: number): boolean {
    return this.heldSince !== undefined && now - this.heldSince < this.timing.atRiskMs;
  }

  /** The hold began (or was last renewed) but is now at risk: it must be claimed again. */
  atRisk(now: number): boolean {
    return this.heldSince !== undefined && !this.holds(now);
  }

  /** The wall time this process took the lease (display), while it holds it. */
  get since(): string | undefined {
    return this.acquiredAt;
  }

  /** The live holder the last read showed, when another process. */
  get standby(): LeaseStandby | undefined {
    return this.other;
  }

  view(now: number): LeaseView {
    return { held: this.holds(now), liveSession: this.holds(now) ? undefined : this.other?.holder.session };
  }
}
