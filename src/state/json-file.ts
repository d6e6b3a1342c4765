/**
 * The one parse of a small JSON file kept beside the state (the identity file, the daemon's
 * records and feed files): its content by a schema, or why it cannot be used, naming every
 * field that does not fit. A file that does not parse is reported, never trusted.
 */
import type { z } from 'zod';

export function parseJsonFile<T>(schema: z.ZodType<T>, text: string): { ok: true; value: T } | { ok: false; reason: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    return { ok: false, reason: `not JSON (${e instanceof Error ? e.message : String(e)})` };
  }
  const r = schema.safeParse(parsed);
  if (r.success) return { ok: true, value: r.data };
  return { ok: false, reason: r.error.issues.map((i) => `${i.path.length > 0 ? i.path.join('.') : 'the file'}: ${i.message}`).join('; ') };
}
