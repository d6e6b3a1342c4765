/**
 * The config file's keys, read from the schema itself, so that nothing lists them by hand:
 * the "did you mean" hints of load.ts and the check that docs/config.md and
 * config.example.json name every key (test/unit/config/config-docs.test.ts) use this walk.
 *
 * Paths are written as in error messages and docs: `queue.timeouts.connectMs`, a list's
 * element as `[]` (`mappings[].watch.mode`). A union of objects (auth's three types)
 * contributes the keys of every branch.
 */
import type { z } from 'zod';

type Schema = z.core.$ZodType;

/** The schema without its optional/nullable/default wrappers. */
function unwrap(schema: Schema): Schema {
  let s = schema;
  for (;;) {
    const def = s._zod.def as { type: string; innerType?: Schema };
    if ((def.type === 'optional' || def.type === 'nullable' || def.type === 'default') && def.innerType) s = def.innerType;
    else return s;
  }
}

/** The object branches a schema may take (one for an object, each object of a union). */
function objectsOf(schema: Schema): Array<Record<string, Schema>> {
  const s = unwrap(schema);
  const def = s._zod.def as { type: string; shape?: Record<string, Schema>; options?: Schema[] };
  if (def.type === 'object' && def.shape) return [def.shape];
  if (def.type === 'union' && def.options) return def.options.flatMap(objectsOf);
  return [];
}

function elementOf(schema: Schema): Schema | undefined {
  const def = unwrap(schema)._zod.def as { type: string; element?: Schema };
  return def.type === 'array' ? def.element : undefined;
}

const join = (parent: string, key: string): string => (parent === '' ? key : `${parent}.${key}`);

/** Every object of the file by its path ('' for the top), with the keys it accepts. */
export function objectKeys(schema: Schema): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  const visit = (s: Schema, path: string): void => {
    const element = elementOf(s);
    if (element) return visit(element, `${path}[]`);
    const shapes = objectsOf(s);
    if (shapes.length === 0) return;
    const keys = [...new Set(shapes.flatMap((shape) => Object.keys(shape)))];
    out[path] = keys;
    for (const key of keys) {
      for (const shape of shapes) if (shape[key]) visit(shape[key], join(path, key));
    }
  };
  visit(schema, '');
  return out;
}
