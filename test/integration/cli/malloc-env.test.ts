/**
 * glibc's malloc settings of the commands that hold a mapping's files (src/cli/malloc-env.ts):
 * `dssync sync` started without them starts again with them as the same process; a command
 * that holds no files never does. (`dssync run`: test/integration/daemon/lifecycle.test.ts.)
 *
 * Seen from inside: a module preloaded by NODE_OPTIONS notes each start of the process's main
 * thread (its pid and the two variables) in a file; the second, if any, is the replaced process.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, type Workspace } from '../../helpers/mirror-check.js';
import { MALLOC_ENV } from '../../../src/cli/malloc-env.js';
import { requireBuiltBinary, runCli } from './run-cli.js';

let ws: Workspace | undefined;
let runs = 0;
beforeAll(() => requireBuiltBinary());
afterEach(async () => {
  await ws?.close();
  ws = undefined;
});

/** Runs `args` with a preload that notes every start; returns the result and the starts noted. */
async function starts(w: Workspace, args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stderr: string; starts: { pid: number; arena?: string; threshold?: string }[] }> {
  const log = join(w.dir, `starts-${++runs}.jsonl`);
  const preload = join(w.dir, 'note-start.mjs');
  await writeFile(
    preload,
    // The main thread's starts only: the command's worker threads run the preload too.
    `import { appendFileSync } from 'node:fs';\nimport { isMainThread } from 'node:worker_threads';\nif (isMainThread) appendFileSync(${JSON.stringify(log)}, JSON.stringify({ pid: process.pid, arena: process.env.MALLOC_ARENA_MAX, threshold: process.env.MALLOC_MMAP_THRESHOLD_ }) + '\\n');\n`,
  );
  const r = await runCli([...args, '--config', w.configPath], { ...w.env, NODE_OPTIONS: `--import ${preload}`, ...env });
  const lines = (await readFile(log, 'utf8').catch(() => '')).split('\n').filter(Boolean);
  return { code: r.code, stderr: r.stderr, starts: lines.map((l) => JSON.parse(l) as { pid: number; arena?: string; threshold?: string }) };
}

describe("the commands' malloc settings", () => {
  it('dssync sync started without them starts once more, as the same process, with them; an own value wins', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    await ws.write('a.txt', 'hello');
    const bare = await starts(ws, ['sync']);
    expect(bare.code, bare.stderr).toBe(0);
    expect(bare.starts).toHaveLength(2);
    expect(bare.starts[0]).toEqual({ pid: bare.starts[0]!.pid });
    expect(bare.starts[1]).toEqual({ pid: bare.starts[0]!.pid, arena: MALLOC_ENV.MALLOC_ARENA_MAX, threshold: MALLOC_ENV.MALLOC_MMAP_THRESHOLD_ });

    const own = await starts(ws, ['sync'], { MALLOC_ARENA_MAX: '4' });
    expect(own.code, own.stderr).toBe(0);
    expect(own.starts.at(-1)).toEqual({ pid: own.starts[0]!.pid, arena: '4', threshold: MALLOC_ENV.MALLOC_MMAP_THRESHOLD_ });

    const set = await starts(ws, ['sync'], { ...MALLOC_ENV });
    expect(set.code, set.stderr).toBe(0);
    expect(set.starts).toHaveLength(1);
  });

  it('a command that holds no files starts once, as it was started', { timeout: 60_000 }, async () => {
    ws = await createWorkspace();
    const r = await starts(ws, ['datasources', 'list']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.starts).toHaveLength(1);
    expect(r.starts[0]).toEqual({ pid: r.starts[0]!.pid });
  });
});
