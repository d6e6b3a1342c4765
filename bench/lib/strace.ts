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

