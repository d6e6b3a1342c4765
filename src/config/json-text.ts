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
  const p = new JsonTextParser(input.charCodeAt(0) === 0xfeff ? input.slice(1) : input);
  try {
    return { ok: true, json: p.parseDocument() };
  } catch (e) {
    if (e instanceof SyntaxProblem) {
      const at = p.posOf(e.offset);
      return { ok: false, problem: { message: e.message, line: at.line, column: at.column } };
    }
    throw e;
  }
}

/** A recursive-descent parser of one JSON text, keeping where each value and key starts. */
class JsonTextParser {
  private i = 0;
  private readonly positions = new Map<string, TextPosition>();
  private readonly keyPositions = new Map<string, TextPosition>();
  private readonly lineStarts: number[];

  constructor(private readonly text: string) {
    this.lineStarts = computeLineStarts(text);
  }

  posOf(offset: number): TextPosition {
    return toPosition(this.lineStarts, offset);
  }

  parseDocument(): ParsedJson {
    this.ws();
    if (this.i >= this.text.length) throw new SyntaxProblem('the file is empty; it must hold a JSON object', this.i);
    const value = this.parseValue([]);
    this.ws();
    if (this.i < this.text.length) this.fail('unexpected text after the end of the JSON value');
    return { value, positions: this.positions, keyPositions: this.keyPositions };
  }

  private ws(): void {
    const text = this.text;
    while (this.i < text.length) {
      const c = text.charCodeAt(this.i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) this.i++;
      else break;
    }
  }

  private fail(what: string, at = this.i): never {
    const found = at >= this.text.length ? 'the end of the file' : `"${this.text[at] ?? ''}"`;
    throw new SyntaxProblem(`${what}, found ${found}`, at);
  }

  /** The character at the cursor. */
  private peek(): string | undefined {
    return this.text[this.i];
  }

  private parseValue(path: PropertyKey[]): unknown {
    this.ws();
    this.positions.set(formatFieldPath(path), this.posOf(this.i));
    const c = this.peek();
    if (c === '{') return this.parseObject(path);
    if (c === '[') return this.parseArray(path);
    if (c === '"') return this.parseString();
    if (c === '-' || (c !== undefined && c >= '0' && c <= '9')) return this.parseNumber();
    for (const [word, value] of [
      ['true', true],
      ['false', false],
      ['null', null],
    ] as const) {
      if (this.text.startsWith(word, this.i)) {
        this.i += word.length;
        return value;
      }
    }
    if (c === "'") return this.fail('strings must use double quotes');
    return this.fail('expected a value (object, array, string, number, true, false or null)');
  }

  private parseObject(path: PropertyKey[]): Record<string, unknown> {
    this.i++; // {
    const obj: Record<string, unknown> = {};
    const seen = new Set<string>();
    this.ws();
    if (this.peek() === '}') {
      this.i++;
      return obj;
    }
    for (;;) {
      this.ws();
      if (this.peek() !== '"') {
        if (this.peek() === '}') this.fail('a comma must not follow the last member of an object');
        this.fail('expected a key in double quotes');
      }
      const keyAt = this.i;
      const key = this.parseString();
      if (seen.has(key)) {
        throw new SyntaxProblem(`the key "${key}" appears twice in the same object; remove one of them`, keyAt);
      }
      seen.add(key);
      this.keyPositions.set(formatFieldPath([...path, key]), this.posOf(keyAt));
      this.ws();
      if (this.peek() !== ':') this.fail(`expected ":" after the key "${key}"`);
      this.i++;
      const value = this.parseValue([...path, key]);
      // Defined as an own property so a key like "__proto__" is data, not a prototype change.
      Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
      if (this.closes('}', 'expected "," or "}" after an object member')) return obj;
    }
  }

  private parseArray(path: PropertyKey[]): unknown[] {
    this.i++; // [
    const arr: unknown[] = [];
    this.ws();
    if (this.peek() === ']') {
      this.i++;
      return arr;
    }
    for (;;) {
      this.ws();
      if (this.peek() === ']') this.fail('a comma must not follow the last element of an array');
      arr.push(this.parseValue([...path, arr.length]));
      if (this.closes(']', 'expected "," or "]" after an array element')) return arr;
    }
  }

  /** After a member or an element: "," (false: another follows) or `close` (true: consumed). */
  private closes(close: string, expected: string): boolean {
    this.ws();
    if (this.peek() === ',') {
      this.i++;
      return false;
    }
    if (this.peek() !== close) this.fail(expected);
    this.i++;
    return true;
  }

  private parseString(): string {
    const text = this.text;
    const start = this.i;
    this.i++; // opening quote
    for (;;) {
      if (this.i >= text.length) throw new SyntaxProblem('a string is not closed (missing ")', start);
      const c = text.charCodeAt(this.i);
      if (c === 0x22) break;
      if (c < 0x20) this.fail('control characters (such as a line break) must be escaped inside strings');
      if (c === 0x5c) {
        const e = text[this.i + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(this.i + 2, this.i + 6))) this.fail('"\\u" must be followed by four hex digits');
          this.i += 6;
          continue;
        }
        if (e === undefined || !'"\\/bfnrt'.includes(e)) this.fail('invalid escape sequence in a string');
        this.i += 2;
        continue;
      }
      this.i++;
    }
    this.i++; // closing quote
    return JSON.parse(text.slice(start, this.i)) as string;
  }

  private parseNumber(): number {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(this.text.slice(this.i, this.i + 400));
    if (!m) return this.fail('invalid number');
    this.i += m[0].length;
    return Number(m[0]);
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
