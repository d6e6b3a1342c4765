/**
 * A state file as dssync 0.1.0 wrote it (format 3): the same lines as format 4, with a
 * header of `{"journalSeq":N}` alone (no "needs", no identity) and the trailer's checksum
 * over that header. Made from today's encoder so the fixture cannot drift from the lines.
 */
import { crc32 } from 'node:zlib';

export function toFormat3(text: string): string {
  const lines = text.split('\n');
  const head = JSON.parse((lines[0] ?? '').replace(/^dssync-state \d+ /, '')) as { journalSeq: number };
  lines[0] = `dssync-state 3 ${JSON.stringify({ journalSeq: head.journalSeq })}`;
  const endAt = lines.findIndex((l) => l.startsWith('end '));
  const body = `${lines.slice(0, endAt).join('\n')}\n`;
  lines[endAt] = `end ${endAt} ${(crc32(Buffer.from(body)) >>> 0).toString(16).padStart(8, '0')}`;
  return lines.join('\n');
}

/** The same state as dssync 0.2.0 wrote it: format 4, `"needs":"0.2.0"` (no writer sessions). */
export function toFormat4(text: string): string {
  const lines = text.split('\n');
  lines[0] = (lines[0] ?? '').replace(/^dssync-state \d+ \{"needs":"[^"]*",/, 'dssync-state 4 {"needs":"0.2.0",');
  const endAt = lines.findIndex((l) => l.startsWith('end '));
  const body = `${lines.slice(0, endAt).join('\n')}\n`;
  lines[endAt] = `end ${endAt} ${(crc32(Buffer.from(body)) >>> 0).toString(16).padStart(8, '0')}`;
  return lines.join('\n');
}
