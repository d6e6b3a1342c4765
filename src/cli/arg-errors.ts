/**
 * The parser's complaints, said in dssync's words: which argument is missing (by its name
 * in the usage line), and for an unknown option the one that was probably meant. Pure.
 */
import { closest } from '../config/load.js';

export interface UsageContext {
  /** The command's usage line, e.g. "$0 documents delete <ds> <doc>". */
  usage?: string | undefined;
  /** The option names known where the error happened (dashed, without the dashes). */
  options: readonly string[];
  /** The arguments as typed, to quote an unknown option with its dashes. */
  typed?: readonly string[] | undefined;
}

export function explainUsageError(message: string, ctx: UsageContext): string {
  const usage = ctx.usage?.replace(/^\$0\b/, 'dssync');
  const missing = /^Not enough non-option arguments: got (\d+), need at least (\d+)/.exec(message);
  if (missing) {
    const names = (usage?.match(/<[^>]+>/g) ?? []).slice(Number(missing[1]), Number(missing[2]));
    const what = names.length ? `missing ${names.join(' and ')}` : 'an argument is missing';
    return `${what}${usage ? `; usage: ${usage}` : ''}`;
  }
  const unknown = /^Unknown arguments?: (.+)$/.exec(message);
  if (unknown) {
    const names = unknown[1]!.split(', ').map((n) => n.trim());
    const asTyped = names.map((n) => (ctx.typed?.some((t) => t.replace(/=.*$/, '').replace(/^-+/, '') === n && t.startsWith('-')) ? `${n.length === 1 ? '-' : '--'}${n}` : n));
    const hints = names.flatMap((n) => {
      const meant = closestOption(n, ctx.options);
      return meant ? [`did you mean --${meant}?`] : [];
    });
    // At the top level a word that is not an option is a command name.
    const what = !ctx.usage && asTyped.every((n) => !n.startsWith('-')) ? 'command' : 'argument';
    return `Unknown ${what}${names.length > 1 ? 's' : ''}: ${asTyped.join(', ')}${hints.length ? `; ${hints.join(' ')}` : ''}`;
  }
  return message;
}

/** The known option a typo was meant as: the same letters without dashes, or at most two edits away. */
export function closestOption(typed: string, options: readonly string[]): string | undefined {
  const bare = typed.replace(/^-+/, '').toLowerCase();
  if (bare.length < 3) return undefined;
  const squash = (s: string): string => s.replace(/[-_]/g, '').toLowerCase();
  const same = options.find((o) => squash(o) === squash(bare));
  if (same) return same;
  return closest(bare, options, 2);
}
