/**
 * Asking before an operation that cannot be undone: a question on a terminal, `--yes` for
 * scripts. Without a terminal and without --yes the answer is no (a script must say yes).
 */
import { createInterface } from 'node:readline/promises';

/** Asks `question` on the terminal; true only for "y" or "yes". Undefined when there is no terminal. */
export async function askOnTerminal(question: string): Promise<boolean | undefined> {
  if (process.stdin.isTTY !== true || process.stderr.isTTY !== true) return undefined;
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await rl.question(`${question} [y/N] `);
    return /^\s*y(es)?\s*$/i.test(answer);
  } finally {
    rl.close();
  }
}
