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
 * Each value is looked for in every form the process sends it in (formsOf): an echo
 * quotes what was on the wire, form-encoded or inside a Basic credential's base64.
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
  rebuild();
}

/**
 * Remembers the HTTP Basic credential of `clientId` and `secret` (RFC 6749 §2.3.1) in every
 * form it is sent: the base64 of `id:secret`, raw and form-encoded (oauth4webapi's), as a
 * proxy that quotes the Authorization header would show it.
 */
export function registerBasicCredential(clientId: string, secret: string | undefined): void {
  if (secret === undefined || secret.trim().length < MIN_SECRET_LENGTH) return;
  registerSecret(secret);
  for (const encode of [(v: string) => v, oauthFormEncode]) registerSecret(Buffer.from(`${encode(clientId)}:${encode(secret)}`).toString('base64'));
}

/** The form-encoding oauth4webapi gives a client id and secret for a Basic header. */
function oauthFormEncode(v: string): string {
  return encodeURIComponent(v).replace(/[-_.!~*'()]|%20/g, (c) => (c === '%20' ? '+' : `%${c.charCodeAt(0).toString(16).toUpperCase()}`));
}

/**
 * A secret in each form the process itself may put on the wire, hence see quoted back: as
 * it is, as JSON writes it, percent-encoded (`%20` for a space), form-encoded by
 * URLSearchParams (`+`) and by oauth4webapi (`+`, and `-_.!~*'()` escaped too), each with
 * its hex digits upper case (as sent) and lower case (as some echo them).
 */
function formsOf(secret: string): string[] {
  const encoded = [encodeURIComponent(secret), new URLSearchParams({ v: secret }).toString().slice(2), oauthFormEncode(secret)];
  const lower = encoded.map((e) => e.replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase()));
  return [secret, JSON.stringify(secret).slice(1, -1), ...encoded, ...lower];
}

function rebuild(): void {
  const forms = new Set<string>();
  for (const s of secrets) for (const f of formsOf(s)) forms.add(f);
  ordered = [...forms].sort((a, b) => b.length - a.length);
}

/**
 * The environment for a child process (the token `command`, a browser opener): this
 * process's, without the variables that carry dssync's secrets (their values are this
 * process's to send, not every child's to read).
 */
export function childEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(env)) if (!SECRET_ENV.has(k)) out[k] = v;
  return out;
}

/** The environment variables dssync reads secrets from. */
const SECRET_ENV = new Set(['DSSYNC_TOKEN', 'DSSYNC_PASSWORD', 'DSSYNC_CLIENT_SECRET']);

/** `text` with every registered secret replaced by "[redacted]". */
export function scrub(text: string): string {
  if (ordered.length === 0 || text.length < MIN_SECRET_LENGTH) return text;
  let out = text;
  for (const s of ordered) if (out.includes(s)) out = out.split(s).join(REDACTED);
  return out;
}
