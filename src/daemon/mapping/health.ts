/**
 * What a mapping's status says of its health: the phase, why it is degraded (by cause), the
 * recent errors, the last pass and the data source's notice. The watch supervisor and the
 * pass loop write it; `MappingRunner.status()` reads it.
 */
import type { MappingStatus, RecentError, RunnerPhase } from '../status/schema.js';

const MAX_RECENT_ERRORS = 50;

/** The causes a mapping is degraded by, one reason each (the last one said) and what happens next (next-step.ts). */
export type DegradedCause = 'watch' | 'pass' | 'service' | 'config';

export class MappingHealth {
  phase: RunnerPhase = 'starting';
  lastPass: MappingStatus['lastPass'];
  lastFullPassOkAt: string | undefined;
  /** The data source renamed in the App (followed by id) or deleted: status shows it. */
  dataSourceNotice: string | undefined;
  private readonly degraded = new Map<DegradedCause, { reason: string; next: string }>();
  private readonly recentErrors: RecentError[] = [];

  constructor(private readonly now: () => number) {}

  setDegraded(cause: DegradedCause, reason: string, next: string): void {
    this.degraded.set(cause, { reason, next });
    this.phase = 'degraded';
  }

  clear(...causes: DegradedCause[]): void {
    for (const c of causes) this.degraded.delete(c);
  }

  /** The phase once nothing runs: degraded while any cause stands, else watching. */
  settledPhase(): RunnerPhase {
    return this.degraded.size > 0 ? 'degraded' : 'watching';
  }

  /** Stopped on its configuration until a reload (pass-loop.ts halt). */
  get halted(): boolean {
    return this.degraded.has('config');
  }

  reasons(): string[] {
    return [...this.degraded.values()].map((d) => d.reason);
  }

  /** What happens next about each reason, in the same order. */
  nexts(): string[] {
    return [...this.degraded.values()].map((d) => d.next);
  }

  remember(e: Omit<RecentError, 'at'>): void {
    this.recentErrors.push({ at: new Date(this.now()).toISOString(), ...e });
    if (this.recentErrors.length > MAX_RECENT_ERRORS) this.recentErrors.splice(0, this.recentErrors.length - MAX_RECENT_ERRORS);
  }

  errors(): RecentError[] {
    return [...this.recentErrors];
  }
}
