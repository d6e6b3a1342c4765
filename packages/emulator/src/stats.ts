/**
 * Request counters for tests and benchmarks. Admin routes (/_emulator/...) are not
 * counted, so reading the stats does not change them.
 */

export interface EmulatorStats {
  /** Every request that reached the emulator (answered, faulted or dropped). */
  requests: number;
  /** By "METHOD /route/:pattern"; unmatched paths count under "METHOD (unmatched)". */
  byRoute: Record<string, number>;
  /** By answered status code ("200", "429", ...). Dropped connections have no status. */
  byStatus: Record<string, number>;
  /** Upload requests that stored their documents (ambiguous ones included). */
  uploads: number;
  /** Documents stored by those uploads. */
  filesUploaded: number;
  /** 429 answers. */
  rateLimited: number;
  /** 5xx answers injected by errorRate or down. */
  injectedErrors: number;
  /** Connections destroyed before anything was done (dropRate). */
  dropped: number;
  /** Writes committed whose answer was replaced by a destroyed connection (ambiguousRate). */
  ambiguous: number;
}

export class StatsCollector {
  private stats: EmulatorStats = StatsCollector.empty();

  static empty(): EmulatorStats {
    return {
      requests: 0,
      byRoute: {},
      byStatus: {},
      uploads: 0,
      filesUploaded: 0,
      rateLimited: 0,
      injectedErrors: 0,
      dropped: 0,
      ambiguous: 0,
    };
  }

  request(routeKey: string): void {
    this.stats.requests++;
    this.stats.byRoute[routeKey] = (this.stats.byRoute[routeKey] ?? 0) + 1;
  }

  status(code: number): void {
    const key = String(code);
    this.stats.byStatus[key] = (this.stats.byStatus[key] ?? 0) + 1;
    if (code === 429) this.stats.rateLimited++;
  }

  upload(files: number): void {
    this.stats.uploads++;
    this.stats.filesUploaded += files;
  }

  injectedError(): void {
    this.stats.injectedErrors++;
  }

  dropped(): void {
    this.stats.dropped++;
  }

  ambiguous(): void {
    this.stats.ambiguous++;
  }

  snapshot(): EmulatorStats {
    return structuredClone(this.stats);
  }

  reset(): void {
    this.stats = StatsCollector.empty();
  }
}
