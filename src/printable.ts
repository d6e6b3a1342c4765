/**
 * Text from outside (file names, the service's messages) made safe for a terminal: control
 * characters are shown as escapes instead of being interpreted. A name holding ESC could
 * otherwise rewrite the screen, and one holding a newline could fake a line of the report
 * ("would delete …"). Applied to every human-readable output; --json stays exact (JSON
 * escapes control characters itself).
 */

// C0 controls, DEL, C1 controls, the Unicode line/paragraph separators and the
// bidirectional overrides/isolates (which reorder what follows them on screen).
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/gu;

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escape(ch: string): string {
  const named = NAMED[ch];
  if (named) return named;
  const code = ch.codePointAt(0)!;
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/** `text` with every control character escaped (`\n`, `\x1b`, `\u202e`...). */
export function printable(text: string): string {
  return text.replace(UNSAFE, escape);
}

/** Several lines of output: each line made printable, the line breaks kept. */
export function printableLines(text: string): string {
  return text
    .split('\n')
    .map((l) => printable(l))
    .join('\n');
}
