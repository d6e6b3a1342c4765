/**
 * Questions asked on a terminal or read from a pipe, one answer a line: questions go to
 * stderr (stdout stays for results), a secret is not echoed on a terminal. Used by
 * `auth login` and `config init`.
 */
import { createInterface } from 'node:readline';

export interface Prompter {
  /** The next line; '' once the input has ended (see `ended`). */
  question(q: string): Promise<string>;
  /** The same, not echoed on a terminal. */
  secret(q: string): Promise<string>;
  /** True once the input has ended and every line was read. */
  ended(): boolean;
  close(): void;
}

export function prompter(input: NodeJS.ReadStream = process.stdin, output: NodeJS.WriteStream = process.stderr): Prompter {
  const tty = input.isTTY === true;
  const rl = createInterface({ input, output, terminal: tty });
  const lines: string[] = [];
  const waiting: ((l: string) => void)[] = [];
  let muted = false;
  const out = rl as unknown as { _writeToOutput?: (s: string) => void };
  const original = out._writeToOutput?.bind(rl);
  out._writeToOutput = (s: string) => {
    if (!muted) original?.(s);
  };
  rl.on('line', (l) => {
    const w = waiting.shift();
    if (w) w(l);
    else lines.push(l);
  });
  let closed = false;
  rl.on('close', () => {
    closed = true;
    for (const w of waiting.splice(0)) w('');
  });
  const next = (q: string, hide: boolean): Promise<string> => {
    output.write(q);
    muted = hide && tty;
    const got = lines.shift();
    const p = got !== undefined ? Promise.resolve(got) : closed ? Promise.resolve('') : new Promise<string>((r) => waiting.push(r));
    return p.then((v) => {
      if (muted) output.write('\n');
      muted = false;
      return v;
    });
  };
  return { question: (q) => next(q, false), secret: (q) => next(q, true), ended: () => closed && lines.length === 0, close: () => rl.close() };
}
