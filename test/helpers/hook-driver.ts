/**
 * Answers the pauses of a process run with DSSYNC_TEST_HOOKS (src/test-hooks.ts): for each
 * `POINT.N.paused` file, runs the test's action (if any) for it, then writes `POINT.N.resume`.
 * The window between two steps of a real process is then the test's, never timing luck.
 */
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** A running driver: its folder, the DSSYNC_TEST_HOOKS value for the process, and what it saw. */
export interface HookDriver {
  dir: string;
  env: string;
  stop(): void;
  /** Pauses seen so far, as "POINT.N: detail". */
  seen: string[];
}

export async function hookDriver(dir: string, points: string[], act: (point: string, n: number, detail: unknown) => Promise<void>): Promise<HookDriver> {
  await mkdir(dir, { recursive: true });
  let stopped = false;
  const seen: string[] = [];
  const handled = new Set<string>();
  const loop = async (): Promise<void> => {
    while (!stopped) {
      for (const name of await readdir(dir).catch(() => [] as string[])) {
        const m = /^(.+)\.(\d+)\.paused$/.exec(name);
        if (!m || handled.has(name)) continue;
        handled.add(name);
        const detail = JSON.parse(await readFile(join(dir, name), 'utf8')) as unknown;
        seen.push(`${m[1]}.${m[2]}: ${JSON.stringify(detail)}`);
        await act(m[1]!, Number(m[2]), detail);
        await writeFile(join(dir, `${m[1]}.${m[2]}.resume`), '');
      }
      await new Promise((r) => setTimeout(r, 30));
    }
  };
  void loop();
  return { dir, env: points.map((p) => `pause:${p}=${dir}`).join(','), stop: () => (stopped = true), seen };
}
