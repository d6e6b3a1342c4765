/**
 * One file's fate under a mapping's `formats` (docs/formats.md): sent as it is, converted to
 * Markdown by which converter, or not mirrored. The mapping's setting for an extension wins
 * over the default of formats.ts; an extension neither knows is sent as it is.
 */
import { converterIdentity, formatOf, type ConverterId, type FormatPolicy } from './formats.js';
import { DEFAULT_LIMITS, type ConvertLimits } from './limits.js';

export type Conversion = { converter: ConverterId; identity: string; limits: ConvertLimits };

export type Formats = Readonly<Record<string, FormatPolicy>>;

/** The policy for `name` (a relative path): the mapping's for its extension, else the default. */
export function policyOf(name: string, formats: Formats | undefined): FormatPolicy {
  const known = formatOf(name);
  const dot = name.lastIndexOf('.');
  const ext = dot > name.lastIndexOf('/') ? name.slice(dot).toLowerCase() : '';
  return formats?.[ext] ?? known?.format.policy ?? 'as-is';
}

/** The conversion `name` gets, or undefined when it is sent as it is (or skipped). */
export function conversionOf(name: string, formats: Formats | undefined, limits: ConvertLimits = DEFAULT_LIMITS): Conversion | undefined {
  const converter = formatOf(name)?.format.converter;
  if (converter === undefined || policyOf(name, formats) !== 'convert') return undefined;
  return { converter, identity: converterIdentity(converter, limits), limits };
}
