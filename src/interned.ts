/**
 * A string kept for long, as V8's one internalized string of its text.
 *
 * V8 internalizes a string used as a key of a Map or a Set (lookups then compare pointers),
 * and the string it was handed becomes a forward (a ThinString) to that copy, which the
 * collector does not always remove: a string kept for the daemon's life and also used as a
 * key (a watched folder's path) would cost two strings at rest, ~70 B instead of ~48 for a
 * path of 27 characters (a heap snapshot of the idle daemon over a million files held
 * 800,000 forwards of the state's paths; docs/performance.md "Session 24"). Internalized
 * when kept, it is one string, and a set of it copies nothing. The state keeps no string of
 * a path at all (its UTF-8 bytes: state/path-column.ts), and a pass marks its rows rather
 * than putting its paths in sets (state/file-table.ts EntryMarks): an internalized string
 * also costs an entry of V8's string table.
 *
 * A Set hands back the internalized key it holds. That is V8's behaviour, not the language's:
 * elsewhere this returns an equal string, and only the memory differs.
 */
const interning = new Set<string>();

export function internalized(text: string): string {
  interning.add(text);
  const held = interning.values().next().value ?? text;
  interning.clear();
  return held;
}
