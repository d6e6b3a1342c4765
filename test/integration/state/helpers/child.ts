/** Child node processes running transpiled state code, with their stdout read line by line. */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

export interface Child {
  proc: ChildProcess;
  pid: number;
  /** Resolves with the first stdout line matching, rejects if the child exits first. */
  waitFor(re: RegExp): Promise<RegExpMatchArray>;
  /** Every stdout line so far. */
  lines: string[];
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill9(): Promise<void>;
}

/** Writes `source` as an ES module in `dir` and runs it with `args`. */
export async function runChild(dir: string, name: string, source: string, args: string[]): Promise<Child> {
  const file = join(dir, name);
  await writeFile(file, source);
  const proc = spawn(process.execPath, [file, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  if (proc.pid === undefined) throw new Error(`could not start ${file}`);
  const lines: string[] = [];
  let err = '';
  proc.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const waiters: { re: RegExp; resolve: (m: RegExpMatchArray) => void; reject: (e: Error) => void }[] = [];
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    proc.on('exit', (code, signal) => {
      for (const w of waiters.splice(0)) w.reject(new Error(`child exited (${code ?? signal}) before printing ${w.re}: ${err}`));
      resolve({ code, signal });
    });
  });
  const rl = createInterface({ input: proc.stdout as NodeJS.ReadableStream });
  rl.on('line', (line) => {
    lines.push(line);
    for (let i = waiters.length - 1; i >= 0; i--) {
      const w = waiters[i];
      const m = w && line.match(w.re);
      if (w && m) {
        waiters.splice(i, 1);
        w.resolve(m);
      }
    }
  });
  return {
    proc,
    pid: proc.pid,
    lines,
    stderr: () => err,
    exited,
    waitFor: (re) =>
      new Promise((resolve, reject) => {
        const done = lines.map((l) => l.match(re)).find((m) => m);
        if (done) resolve(done);
        else if (proc.exitCode !== null || proc.signalCode !== null) reject(new Error(`child already exited: ${err}`));
        else waiters.push({ re, resolve, reject });
      }),
    kill9: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await exited;
    },
  };
}
