/**
 * The summary `strace -f -c` writes (bench/cpu-ab.ts `--strace`): calls per system call, all
 * threads of the process. Its table is `% time, seconds, usecs/call, calls, [errors], syscall`:
 * the errors column is empty for a call that never failed, so a row is read from both ends.
 */
export function parseStraceSummary(text: string): Map<string, number> {
  const calls = new Map<string, number>();
  for (const line of text.split('\n')) {
    const cells = line.trim().split(/\s+/);
    if (cells.length < 5 || !/^\d/.test(cells[0]!)) continue;
    const name = cells.at(-1)!;
    if (name === 'total') continue;
    calls.set(name, (calls.get(name) ?? 0) + Number(cells[3]));
  }
  return calls;
}

/** (large − small) / files per call name, every name of either side. */
export function marginalCalls(small: ReadonlyMap<string, number>, large: ReadonlyMap<string, number>, files: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const name of new Set([...small.keys(), ...large.keys()])) out.set(name, ((large.get(name) ?? 0) - (small.get(name) ?? 0)) / files);
  return out;
}
