/**
 * A folder lister's `testEntryHook` that holds each file's lstat in the worker until the test
 * lets it go: a listing slow but moving, one step at a time, with no sleep (the test moves
 * the fake clock while a file is held). While `armed` exists, the worker's lstat of a file
 * named in `files` first says so (gates/NAME.at) and waits for gates/NAME.go, or for `armed`
 * to be gone (removing it lets a failed test's worker end).
 */
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from './wait-for.js';

export function heldLstats(gates: string, armed: string, files: readonly string[]): { hook: string; next(): Promise<string>; release(name: string): void } {
  const hook = `const fs = require('node:fs'); const armed = ${JSON.stringify(armed)}; const name = require('node:path').basename(path); if (!${JSON.stringify(files)}.includes(name) || !fs.existsSync(armed)) return; const g = ${JSON.stringify(gates)} + '/' + name; fs.writeFileSync(g + '.at', ''); const nap = new Int32Array(new SharedArrayBuffer(4)); while (!fs.existsSync(g + '.go') && fs.existsSync(armed)) Atomics.wait(nap, 0, 0, 5);`;
  /** The file whose lstat the worker holds, if it holds one. */
  const held = (): string | undefined =>
    readdirSync(gates)
      .filter((n) => n.endsWith('.at'))
      .map((n) => n.slice(0, -'.at'.length))
      .find((n) => !existsSync(join(gates, `${n}.go`)));
  return {
    hook,
    async next() {
      let name: string | undefined;
      await waitFor(() => (name = held()) !== undefined, { what: 'the worker to hold a file\'s lstat', timeout: 20_000, interval: 10 });
      return name!;
    },
    release(name) {
      writeFileSync(join(gates, `${name}.go`), '');
    },
  };
}
