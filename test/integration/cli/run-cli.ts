/**
 * Runs the BUILT `dssync` binary (dist/src/cli/main.js) as a child process, the way an
 * operator or a script does, with an environment that holds only what the test gives it
 * (no DSSYNC_* setting leaks in from the developer's shell).
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../../dist/src/cli/main.js', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Fails early with the fix, instead of every test failing with ENOENT. */
export function requireBuiltBinary(): void {
  if (!existsSync(BIN)) {
    throw new Error(`${BIN} is missing: build first with npx tsc -p tsconfig.build.json; node scripts/postbuild.mjs`);
  }
}

/**
 * Runs the binary with `args`. `prefix`: a command it runs under, whose arguments node's
 * follow (e.g. `setpriv --reuid=65534 …`: as a user without access).
 */
export function runCli(args: readonly string[], env: Record<string, string> = {}, cwd?: string, prefix: readonly string[] = [], bin: string = BIN): Promise<CliResult> {
  const [command, ...before] = [...prefix, process.execPath];
  const child = spawn(command as string, [...before, bin, ...args], { cwd, env: cliEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  return outcome(child);
}

/** The binary with `input` as its standard input (answers to its questions, one a line). */
export function runCliWithInput(args: readonly string[], input: string, env: Record<string, string> = {}): Promise<CliResult> {
  const child = spawn(process.execPath, [BIN, ...args], { env: cliEnv(env), stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin.end(input);
  return outcome(child);
}

function cliEnv(env: Record<string, string>): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...env };
}

function outcome(child: ChildProcessByStdio<Writable | null, Readable, Readable>): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Parses stdout as JSON, with the whole output in the message when it is not. */
export function jsonOf<T = unknown>(r: CliResult): T {
  try {
    return JSON.parse(r.stdout) as T;
  } catch {
    throw new Error(`stdout is not JSON (exit ${r.code}):\n${r.stdout}\nstderr:\n${r.stderr}`);
  }
}
