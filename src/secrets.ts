/**
 * The live secrets of this process and the one function that removes them from text
 * (issue 24.5). Every secret is registered where it enters the process: a token, password or
 * client secret when its source is read (auth/settings.ts, auth/secret-file.ts), a refresh
 * token when stored or received, an access token when a provider obtains it. Every output
 * path then passes its text through `scrub()`: error messages (api/errors.ts), the logger
 * (log.ts, both JSON and pretty lines), the CLI's error line (cli/exit.ts) and the status
 * endpoint's answers. Wherever the text came from (a service that echoes the Authorization
 * header in a body we quote, a token endpoint that repeats the password), the value itself
 * is what is looked for, so no path has to know which fields might carry one.
 *
 * No other dssync module is imported: the logger and every layer may use this one.
 */

/**
 * Shorter values are not registered: scrubbing a 4-character password out of every line
 * would mangle ordinary words and numbers, and such a value is no real secret anyway.
 */
export const MIN_SECRET_LENGTH = 8;

/** Access tokens rotate; the oldest are forgotten past this many (each expired long ago). */
const MAX_SECRETS = 256;

export const REDACTED = '[redacted]';

/** Insertion-ordered: the oldest is dropped first. */
const secrets = new Set<string>();
/** Longest first, so that a secret containing another is replaced whole. */
let ordered: string[] = [];

/** Remembers `value` (trimmed) as a secret to scrub from every output from now on. */
export function registerSecret(value: string | undefined | null): void {
  if (typeof value !== 'string') return;
  const v = value.trim();
  if (v.length < MIN_SECRET_LENGTH || secrets.has(v)) return;
  secrets.add(v);
  if (secrets.size > MAX_SECRETS) {
    const oldest = secrets.values().next().value;
    if (oldest !== undefined) secrets.delete(oldest);
  }
  // Each secret also as JSON writes it (a quote or backslash in it is escaped there).
  const forms = new Set<string>();
  for (const s of secrets) {
    forms.add(s);
    forms.add(JSON.stringify(s).slice(1, -1));
  }
  ordered = [...forms].sort((a, b) => b.length - a.length);
}

/** `text` with every registered secret replaced by "[redacted]". */
export function scrub(text: string): string {
  if (ordered.length === 0 || text.length < MIN_SECRET_LENGTH) return text;
  let out = text;
  for (const s of ordered) if (out.includes(s)) out = out.split(s).join(REDACTED);
  return out;
}

/** Whether `text` holds a registered secret (tests and assertions). */
export function holdsSecret(text: string): boolean {
  return scrub(text) !== text;
}

/** Forgets every secret: tests only. */
export function forgetSecretsForTests(): void {
  secrets.clear();
  ordered = [];
}
