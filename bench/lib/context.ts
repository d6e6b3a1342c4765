/** Sizes of a benchmark run: the sizes (full), a smaller set (quick), a tiny one (smoke test). */

export type BenchMode = 'full' | 'quick' | 'smoke';

export interface Sizes {
  /** initialMirror (and rateCap, latency, burst: the same tree). */
  initialFiles: number;
  initialFolders: number;
  /** Files the naive client mirrors; its time is scaled to initialFiles when fewer. */
  baselineFiles: number;
  /** dssync runs of initialMirror (the median is reported). */
  repeat: number;
  rateCapRps: number;
  restartFiles: number;
  restartFolders: number;
  latencySamples: number;
  /** Pause between two latency samples (ms). */
  latencySpacingMs: number;
  burstFiles: number;
  /** Idle time before footprint figures are read, and the CPU sampling window (s). */
  settleSeconds: number;
  cpuWindowSeconds: number;
  /**
   * footprint: the window over which the idle daemon's requests to the service are counted
   * (issue 39.7: requests per mapping per hour at rest); it begins with the CPU window and
   * spans at least it. The lease renews every 15 s: 60 s hold three or four renewals, and the
   * rate is taken from their interval (lib/rest-rate.ts).
   */
  restWindowSeconds: number;
  /** Service latency added to every request of the measured runs (setups run without). */
  latencyMs: number;
  /** scale (only with BENCH_ONLY=scale…, never in CI): the daemon's tree, and the state sizes of the cost curve. */
  scaleFiles: number;
  scaleFolders: number;
  scaleCurve: number[];
  /** scaleDaemon: write the first mirror's result instead of running it (hours at a million files here). */
  scaleSeeded: boolean;
  /**
   * scaleDaemon without scaleSeeded: 0, the first mirror runs with generous settings and no
   * latency (its memory measured, not its time); R > 0, it runs as a user's does (default
   * settings, the service at latencyMs and limited to R accepted requests/s), and its time
   * is compared with what R allows (issue 39.5).
   */
  scaleSetupCapRps: number;
  /** scaleMemory: sizes at which the restart path's structures are weighed (in this process). */
  scaleMemory: number[];
  /** scaleListing: data source sizes listed by a client process in the sync form (20 ms latency). */
  scaleListing: number[];
  /** office: files of each format in the mixed share, and the large files converted alone. */
  officePerFormat: number;
  officeLargeXlsxMB: number;
  officeLargeSlides: number;
}

export const SIZES: Record<BenchMode, Sizes> = {
  full: {
    initialFiles: 10_000,
    initialFolders: 100,
    baselineFiles: 10_000,
    repeat: 3,
    rateCapRps: 50,
    restartFiles: 100_000,
    restartFolders: 5_000,
    latencySamples: 50,
    latencySpacingMs: 300,
    burstFiles: 2_000,
    settleSeconds: 15,
    cpuWindowSeconds: 10,
    restWindowSeconds: 60,
    latencyMs: 20,
    scaleFiles: 1_000_000,
    scaleFolders: 50_000,
    scaleCurve: [10_000, 100_000, 300_000, 1_000_000],
    scaleMemory: [100_000, 1_000_000],
    scaleListing: [100_000, 1_000_000],
    scaleSeeded: true,
    scaleSetupCapRps: 0,
    officePerFormat: 30,
    officeLargeXlsxMB: 50,
    officeLargeSlides: 300,
  },
  quick: {
    initialFiles: 1_000,
    initialFolders: 20,
    baselineFiles: 1_000,
    repeat: 1,
    rateCapRps: 50,
    restartFiles: 10_000,
    restartFolders: 500,
    latencySamples: 20,
    latencySpacingMs: 300,
    burstFiles: 500,
    settleSeconds: 5,
    cpuWindowSeconds: 5,
    restWindowSeconds: 30,
    latencyMs: 20,
    scaleFiles: 5_000,
    scaleFolders: 250,
    scaleCurve: [1_000, 10_000],
    scaleMemory: [5_000],
    scaleListing: [10_000],
    scaleSeeded: false,
    scaleSetupCapRps: 0,
    officePerFormat: 8,
    officeLargeXlsxMB: 10,
    officeLargeSlides: 100,
  },
  smoke: {
    initialFiles: 60,
    initialFolders: 4,
    baselineFiles: 60,
    repeat: 1,
    rateCapRps: 50,
    restartFiles: 200,
    restartFolders: 10,
    latencySamples: 3,
    latencySpacingMs: 100,
    burstFiles: 20,
    settleSeconds: 1,
    cpuWindowSeconds: 1,
    restWindowSeconds: 1,
    latencyMs: 5,
    scaleFiles: 200,
    scaleFolders: 10,
    scaleCurve: [1_000],
    scaleMemory: [200],
    scaleListing: [2_000],
    scaleSeeded: false,
    scaleSetupCapRps: 0,
    officePerFormat: 2,
    officeLargeXlsxMB: 1,
    officeLargeSlides: 10,
  },
};

export interface BenchContext {
  mode: BenchMode;
  sizes: Sizes;
  /** A temp folder of this run (removed at the end). */
  tmp: string;
}
