/**
 * How a file's name travels in a multipart upload. undici's FormData (like every WHATWG
 * implementation) escapes three characters of a part's filename: LF as %0A, CR as %0D and
 * `"` as %22. A service may store that escaped name, or decode some or all of the escapes;
 * and a name that itself contained "%22" comes back as `"` from a decoding service. The
 * document a service returns (or lists) for a file may therefore carry any of these forms,
 * and recognising them is what keeps a lost or unmatched upload answer from becoming a
 * duplicate upload. Pure.
 */

/** The filename as sent in the multipart body. */
export function escapeFormName(name: string): string {
  return name.replace(/\n/g, '%0A').replace(/\r/g, '%0D').replace(/"/g, '%22');
}

const DECODES: [RegExp, string][] = [
  [/%22/gi, '"'],
  [/%0A/gi, '\n'],
  [/%0D/gi, '\r'],
];

/** Every name the service may report for a file sent as `name` (the name itself first). */
export function formNameForms(name: string): string[] {
  const sent = escapeFormName(name);
  const forms = new Set<string>([name, sent]);
  // A decoder may undo any subset of the three escapes.
  for (let mask = 1; mask < 1 << DECODES.length; mask++) {
    let s = sent;
    DECODES.forEach(([re, ch], i) => {
      if (mask & (1 << i)) s = s.replace(re, ch);
    });
    forms.add(s);
  }
  return [...forms];
}
