/**
 * Parses the config file's JSON text with positions. JSON.parse on Node 20 often reports a
 * syntax error without a position, and never says where a valid-but-wrong value sits; an
 * operator fixing a config file wants "line 12, column 7". This small strict scanner
 * (RFC 8259) finds the first syntax error, rejects duplicate keys (JSON.parse would keep the
 * last one silently), and records where each value starts so schema errors can point at it.
 */

export interface TextPosition {
  line: number;
  column: number;
}

export interface JsonSyntaxProblem extends TextPosition {
  message: string;
}

export interface ParsedJson {
  value: unknown;
  /** Start of each value, keyed by field path as formatted by formatFieldPath (`""` = root). */
  positions: Map<string, TextPosition>;
  /** Start of each object member's key, keyed the same way (for "unknown key" errors). */
  keyPositions: Map<string, TextPosition>;
}

export type ParseJsonResult = { ok: true; json: ParsedJson } | { ok: false; problem: JsonSyntaxProblem };

/** `["mappings", 1, "path"]` -> `mappings[1].path`; the root is `""`. */
export function formatFieldPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const seg of path) {
    if (typeof seg === 'number') out += `[${seg}]`;
    else {
      const s = String(seg);
      const plain = /^[A-Za-z_$][\w$]*$/.test(s);
      if (!plain) out += `[${JSON.stringify(s)}]`;
      else out += out === '' ? s : `.${s}`;
    }
  }
  return out;
}

class SyntaxProblem extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

export function parseJsonText(input: string): ParseJsonResult {
  // A UTF-8 byte order mark is common in files saved by Windows editors; it is not JSON.
  const text = input.charCodeAt(0) === 0xfeff ? input.slice(1) : input;
  const positions = new Map<string, TextPosition>();
  const keyPositions = new Map<string, TextPosition>();
  const lineStarts = computeLineStarts(text);
  const posOf = (offset: number): TextPosition => toPosition(lineStarts, offset);
  let i = 0;

  const ws = (): void => {
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++;
      else break;
    }
  };
  const describeAt = (at: number): string => {
    if (at >= text.length) return 'the end of the file';
    const ch = text[at] ?? '';
    return `"${ch}"`;
  };
  const fail = (what: string, at = i): never => {
    throw new SyntaxProblem(`${what}, found ${describeAt(at)}`, at);
  };

  const parseValue = (path: PropertyKey[]): unknown => {
    ws();
    positions.set(formatFieldPath(path), posOf(i));
    const c = text[i];
    if (c === '{') return parseObject(path);
    if (c === '[') return parseArray(path);
    if (c === '"') return parseString();
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return parseNumber();
    for (const [word, value] of [
      ['true', true],
      ['false', false],
      ['null', null],
    ] as const) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return value;
      }
    }
    if (c === "'") return fail('strings must use double quotes');
    return fail('expected a value (object, array, string, number, true, false or null)');
  };

  const parseObject = (path: PropertyKey[]): Record<string, unknown> => {
    i++; // {
    const obj: Record<string, unknown> = {};
    const seen = new Set<string>();
    ws();
    if (text[i] === '}') {
      i++;
      return obj;
    }
    for (;;) {
      ws();
      if (text[i] !== '"') {
        if (text[i] === '}') fail('a comma must not follow the last member of an object');
        fail('expected a key in double quotes');
      }
      const keyAt = i;
      const key = parseString();
      if (seen.has(key)) {
        throw new SyntaxProblem(`the key "${key}" appears twice in the same object; remove one of them`, keyAt);
      }
      seen.add(key);
      keyPositions.set(formatFieldPath([...path, key]), posOf(keyAt));
      ws();
      if (text[i] !== ':') fail(`expected ":" after the key "${key}"`);
      i++;
      const value = parseValue([...path, key]);
      // Defined as an own property so a key like "__proto__" is data, not a prototype change.
      Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
      ws();
      if (text[i] === ',') {
        i++;
        continue;
      }
      if (text[i] === '}') {
        i++;
        return obj;
      }
      fail('expected "," or "}" after an object member');
    }
  };

  const parseArray = (path: PropertyKey[]): unknown[] => {
    i++; // [
    const arr: unknown[] = [];
    ws();
    if (text[i] === ']') {
      i++;
      return arr;
    }
    for (;;) {
      ws();
      if (text[i] === ']') fail('a comma must not follow the last element of an array');
      arr.push(parseValue([...path, arr.length]));
      ws();
      if (text[i] === ',') {
        i++;
        continue;
      }
      if (text[i] === ']') {
        i++;
        return arr;
      }
      fail('expected "," or "]" after an array element');
    }
  };

  const parseString = (): string => {
    const start = i;
    i++; // opening quote
    for (;;) {
      if (i >= text.length) throw new SyntaxProblem('a string is not closed (missing ")', start);
      const c = text.charCodeAt(i);
      if (c === 0x22) break;
      if (c < 0x20) fail('control characters (such as a line break) must be escaped inside strings');
      if (c === 0x5c) {
        const e = text[i + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) fail('"\\u" must be followed by four hex digits', i);
          i += 6;
          continue;
        }
        if (e === undefined || !'"\\/bfnrt'.includes(e)) fail('invalid escape sequence in a string', i);
        i += 2;
        continue;
      }
      i++;
    }
    i++; // closing quote
    return JSON.parse(text.slice(start, i)) as string;
  };

  const parseNumber = (): number => {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (!m) return fail('invalid number');
    i += m[0].length;
    return Number(m[0]);
  };

  try {
    ws();
    if (i >= text.length) throw new SyntaxProblem('the file is empty; it must hold a JSON object', i);
    const value = parseValue([]);
    ws();
    if (i < text.length) fail('unexpected text after the end of the JSON value');
    return { ok: true, json: { value, positions, keyPositions } };
  } catch (e) {
    if (e instanceof SyntaxProblem) {
      const p = posOf(e.offset);
      return { ok: false, problem: { message: e.message, line: p.line, column: p.column } };
    }
    throw e;
  }
}

function computeLineStarts(text: string): number[] {
  const starts = [0];
  for (let k = 0; k < text.length; k++) if (text.charCodeAt(k) === 0x0a) starts.push(k + 1);
  return starts;
}

function toPosition(lineStarts: number[], offset: number): TextPosition {
  let lo = 0;
  let hi = lineStarts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if ((lineStarts[mid] ?? 0) <= offset) lo = mid;
    else hi = mid - 1;
  }
  return { line: lo + 1, column: offset - (lineStarts[lo] ?? 0) + 1 };
}
