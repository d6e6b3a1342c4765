/**
 * What the bench's "alone" processes share (walk-alone.ts, watch-alone.ts: one piece of the
 * daemon measured in a process of its own): per-thread CPU from /proc, the ballast that
 * stands in for a daemon's state, and the entry's exit.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { parseTaskStat, TICKS_PER_SECOND } from './thread-cpu.js';

/** CPU (ms, user + system) of each thread of this process, by thread id. */
export function threadCpu(): Map<number, { name: string; ms: number }> {
  const out = new Map<number, { name: string; ms: number }>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const s = parseTaskStat(readFileSync(`/proc/self/task/${tid}/stat`, 'utf8'));
      if (s !== undefined) out.set(Number(tid), { name: s.name, ms: (s.ticks * 1000) / TICKS_PER_SECOND });
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

/** CPU (ms) of the main thread (its thread id is the process id). */
export function mainThreadCpuMs(): number {
  return threadCpu().get(process.pid)?.ms ?? 0;
}

/**
 * `--ballast N`: a Map of N path-like strings held meanwhile, as a daemon holds its state's
 * index by path while it starts: the collector then marks a large heap, and garbage made
 * on the main thread costs what it costs in the daemon.
 */
export function ballast(argv: readonly string[] = process.argv): Map<string, number> | undefined {
  const at = argv.indexOf('--ballast');
  if (at < 0) return undefined;
  const n = Number(argv[at + 1]);
  const m = new Map<string, number>();
  for (let i = 0; i < n; i++) m.set(`p${String(i % 224).padStart(3, '0')}/f${String(i % 50000).padStart(5, '0')}/doc-${String(i).padStart(7, '0')}.txt`, i);
  return m;
}

/** Runs the entry's main, then exits (0, or 1 with the error on stderr). */
export function runAlone(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (e: unknown) => {
      process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
      process.exit(1);
    },
  );
}
