/**
 * What the service does to the names it is given (issue 34, cases 6 to 8), learned from its
 * answers and kept in the state (PassRecord.serviceNames), so that a rewrite it always makes
 * is not fought on every pass and a rename it ignores is not retried for ever. Pure.
 *
 * The rewrites modelled are those services are seen to make to a stored name, in this order:
 * lower-cased, the extension dropped, a suffix appended (" (1)"), cut at a number of UTF-8
 * bytes. Anything else it does is no rule: such a name is compared as sent.
 */
import type { ServiceNamesRecord } from '../state/schema.js';
import { findUploadMark } from './upload-mark.js';
import { nfc } from '../unicode.js';

/**
 * What the service was seen to do (the state's record, state/schema.ts): renames ignored (a
 * metadata update keeps the document's name: the App shows the one it was uploaded under),
 * and the rule that turns a name given into the name stored (absent: kept as sent).
 */
export type ServiceNames = ServiceNamesRecord;
export type NameRule = NonNullable<ServiceNames['rule']>;

/** The name the service stores when given `name`, by `rule`. */
export function storedName(name: string, rule: NameRule | undefined): string {
  if (rule === undefined) return name;
  let out = rule.lower ? name.toLowerCase() : name;
  if (rule.noExtension) out = withoutExtension(out);
  if (rule.suffix !== undefined) out += rule.suffix;
  return rule.maxBytes === undefined ? out : cutToBytes(out, rule.maxBytes);
}

/**
 * True when a document's name is what the service makes of `wanted`: the name itself, or
 * the name the learned rule gives. With renames ignored, any name but a marked upload name
 * (the mark is never meant to stay: such a document is sent again, plan.ts).
 */
export function nameAsStored(docName: string, wanted: string, names: ServiceNames | undefined): boolean {
  const have = nfc(docName);
  if (have === nfc(wanted)) return true;
  if (names?.rule !== undefined && have === nfc(storedName(wanted, names.rule))) return true;
  return names?.renamesIgnored === true && findUploadMark(docName) === undefined;
}

/**
 * The rule that turns `sent` into `shown`, as far as one answer tells (`prior`: what earlier
 * answers taught, kept where this one says nothing, e.g. a length limit a short name does
 * not reach); undefined when no combination of the modelled rewrites explains it.
 */
export function learnNameRule(sent: string, shown: string, prior?: NameRule): NameRule | undefined {
  const have = nfc(shown);
  // What earlier answers taught is tried first (a rewrite this name does not show, such as
  // lower-casing a name already in lower case, is kept); else the fewest rewrites. An exact
  // explanation wins over a new suffix, and both over a cut (a dropped extension is no cut).
  const order = (known: boolean | undefined): boolean[] => (known ? [true, false] : [false, true]);
  const bases: { flags: NameRule; base: string }[] = [];
  for (const lower of order(prior?.lower)) {
    for (const noExtension of order(prior?.noExtension)) {
      let base = lower ? sent.toLowerCase() : sent;
      if (noExtension) base = withoutExtension(base);
      bases.push({ flags: { ...(lower ? { lower: true } : {}), ...(noExtension ? { noExtension: true } : {}) }, base: nfc(base) });
    }
  }
  const suffix = prior?.suffix ?? '';
  const withSuffix = (flags: NameRule, sfx: string): NameRule => (sfx === '' ? flags : { ...flags, suffix: sfx });
  for (const { flags, base } of bases) if (have === base + suffix) return withLimit(withSuffix(flags, suffix), prior?.maxBytes);
  for (const { flags, base } of bases) if (have.length > base.length && have.startsWith(base)) return withLimit(withSuffix(flags, have.slice(base.length)), prior?.maxBytes);
  for (const { flags, base } of bases) {
    const full = base + suffix;
    if (have !== '' && have.length < full.length && full.startsWith(have)) return { ...withSuffix(flags, suffix), maxBytes: utf8Bytes(have) };
  }
  return undefined;
}

function withLimit(rule: NameRule, maxBytes: number | undefined): NameRule {
  return maxBytes === undefined ? rule : { ...rule, maxBytes };
}

/** The same record, field for field (nothing new learned). */
export function sameServiceNames(a: ServiceNames | undefined, b: ServiceNames | undefined): boolean {
  return JSON.stringify(a ?? {}) === JSON.stringify(b ?? {});
}

/** In words, for the log, the report and `probe --write`. */
export function describeServiceNames(names: ServiceNames): string[] {
  const out: string[] = [];
  const r = names.rule;
  if (r?.lower) out.push('lower-cases names');
  if (r?.noExtension) out.push('drops the extension');
  if (r?.suffix !== undefined) out.push(`appends ${JSON.stringify(r.suffix)}`);
  if (r?.maxBytes !== undefined) out.push(`cuts names at ${r.maxBytes} bytes`);
  if (names.renamesIgnored) out.push('ignores a new name in an update (the App keeps the name a document was uploaded under)');
  if (names.urlsIgnored) out.push('ignores a new url in an update (the App keeps the url a document was first given)');
  return out;
}

/** Where `name`'s extension starts (its length when it has none): a dot that starts the base name (".bashrc") does not. */
export function extensionStart(name: string): number {
  const dot = name.lastIndexOf('.');
  return dot > name.lastIndexOf('/') + 1 ? dot : name.length;
}

function withoutExtension(name: string): string {
  return name.slice(0, extensionStart(name));
}

function utf8Bytes(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

/** The longest start of `s` of at most `max` UTF-8 bytes that ends on a character's boundary. */
export function cutToBytes(s: string, max: number): string {
  if (utf8Bytes(s) <= max) return s;
  let bytes = 0;
  let out = '';
  for (const ch of s) {
    const n = utf8Bytes(ch);
    if (bytes + n > max) break;
    bytes += n;
    out += ch;
  }
  return out;
}
