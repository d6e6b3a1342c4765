/**
 * Each skipped or excluded file is named in the log once (the status lists them all the
 * time): a link leading outside the folder or a FIFO is heard of, without a line per pass.
 */
import type { PassReport } from '../../engine/pass-report.js';
import type { Logger } from '../../log.js';
import type { PassKind } from './schedule.js';

export class SkipAnnouncer {
  private announced = new Set<string>();

  constructor(private readonly log: Logger) {}

  announce(kind: PassKind, skipped: PassReport['skipped']): void {
    if (skipped.length === 0 && this.announced.size === 0) return;
    // A full pass sees everything: what it no longer skips may be named again later.
    const now = kind === 'full' ? new Set<string>() : this.announced;
    for (const s of skipped) {
      const key = `${s.path}\u0000${s.reason}`;
      now.add(key);
      if (!this.announced.has(key)) this.log.info({ path: s.path, reason: s.reason }, s.excluded ? 'file excluded' : 'file skipped');
    }
    this.announced = now;
  }
}
