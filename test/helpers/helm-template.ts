/**
 * Renders a Helm chart without helm (none installs offline here): the part of Go's
 * text/template and of Helm's functions the chart in deploy/helm uses, and no more — text
 * with `{{ }}` actions and their `-` trim markers, `if`/`else`/`end`, pipelines, parenthesised
 * calls, string and number literals, `.Values…`, `.Release.Name`, `.Chart…`, `.Files.Get`, and
 * the functions toYaml, toJson, nindent, indent, quote, default, required, printf (%v %s %q
 * %d), dict, merge, mul, div, not. Anything else throws: the chart must stay within what is
 * rendered here, or the test must learn it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

type Value = unknown;
interface Ctx {
  Values: Record<string, Value>;
  Release: { Name: string; Namespace: string };
  Chart: Record<string, Value>;
  files: (path: string) => string;
}

type Node = { text: string } | { expr: string } | { cond: string; then: Node[]; else: Node[] };

/** Each file of templates/ (but _*.tpl), rendered with the chart's values.yaml under `overrides`. */
export function renderChart(dir: string, overrides: Record<string, Value>, release = { Name: 'dssync', Namespace: 'default' }): Map<string, string> {
  // As helm does with -f/--set: a null removes the default's key (a hostPath replaced by nfs).
  const values = deepMerge(readYaml(join(dir, 'values.yaml')) as Record<string, Value>, overrides, true);
  const chart = readYaml(join(dir, 'Chart.yaml')) as Record<string, Value>;
  const ctx: Ctx = { Values: values, Release: release, Chart: { Name: chart['name'], Version: chart['version'], AppVersion: chart['appVersion'] }, files: (p) => readFileSync(join(dir, p), 'utf8') };
  const out = new Map<string, string>();
  for (const f of readdirSync(join(dir, 'templates')).sort()) {
    if (f.startsWith('_')) continue;
    out.set(f, renderTemplate(readFileSync(join(dir, 'templates', f), 'utf8'), ctx));
  }
  return out;
}

/** YAML documents as JSON, parsed by Python's yaml module (the way test/integration/deploy does). */
export function readYamlDocuments(text: string): Record<string, unknown>[] {
  const r = spawnSync('python3', ['-c', 'import json, sys, yaml\nprint(json.dumps([d for d in yaml.safe_load_all(sys.stdin) if d is not None]))'], { input: text, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`not YAML:\n${r.stderr}\n--- text ---\n${text}`);
  return JSON.parse(r.stdout) as Record<string, unknown>[];
}

function readYaml(path: string): unknown {
  return readYamlDocuments(readFileSync(path, 'utf8'))[0] ?? {};
}

export function renderTemplate(text: string, ctx: Ctx): string {
  return run(parse(scan(text)), ctx);
}

// ---- scanning and parsing -------------------------------------------------------------

type Token = { text: string } | { action: string };

function scan(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  let trimNext = false;
  while (i < text.length) {
    const open = text.indexOf('{{', i);
    let chunk = open < 0 ? text.slice(i) : text.slice(i, open);
    if (trimNext) chunk = chunk.replace(/^\s+/, '');
    if (open < 0) {
      tokens.push({ text: chunk });
      break;
    }
    const trimBefore = text[open + 2] === '-' && /\s/.test(text[open + 3] ?? '');
    if (trimBefore) chunk = chunk.replace(/\s+$/, '');
    tokens.push({ text: chunk });
    let j = open + (trimBefore ? 3 : 2);
    let inString = false;
    for (; j < text.length; j++) {
      const c = text[j];
      if (inString) {
        if (c === '\\') j++;
        else if (c === '"') inString = false;
      } else if (c === '"') inString = true;
      else if (text.startsWith('}}', j)) break;
    }
    if (j >= text.length) throw new Error(`unclosed action at ${open}`);
    let body = text.slice(open + (trimBefore ? 3 : 2), j);
    trimNext = /\s-$/.test(body);
    if (trimNext) body = body.slice(0, -1);
    tokens.push({ action: body.trim() });
    i = j + 2;
  }
  return tokens;
}

function parse(tokens: Token[]): Node[] {
  const root: Node[] = [];
  const stack: { nodes: Node[]; node?: { cond: string; then: Node[]; else: Node[] } }[] = [{ nodes: root }];
  for (const t of tokens) {
    const top = stack[stack.length - 1]!;
    if ('text' in t) {
      if (t.text) top.nodes.push({ text: t.text });
      continue;
    }
    const a = t.action;
    if (a.startsWith('/*')) continue;
    if (a.startsWith('if ')) {
      const node = { cond: a.slice(3), then: [] as Node[], else: [] as Node[] };
      top.nodes.push(node);
      stack.push({ nodes: node.then, node });
    } else if (a === 'else') {
      if (!top.node) throw new Error('else outside if');
      top.nodes = top.node.else;
    } else if (a === 'end') {
      if (stack.length === 1) throw new Error('end without if');
      stack.pop();
    } else if (/^(range|with|define|template|block)\b/.test(a)) {
      throw new Error(`not rendered by this helper: {{ ${a} }}`);
    } else top.nodes.push({ expr: a });
  }
  if (stack.length !== 1) throw new Error('if without end');
  return root;
}

// ---- evaluation -------------------------------------------------------------------------

function run(nodes: Node[], ctx: Ctx): string {
  let out = '';
  for (const n of nodes) {
    if ('text' in n) out += n.text;
    else if ('expr' in n) out += stringOf(evalPipeline(n.expr, ctx));
    else out += run(truthy(evalPipeline(n.cond, ctx)) ? n.then : n.else, ctx);
  }
  return out;
}

/** Splits on `sep` outside strings and parentheses. */
function split(text: string, sep: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let inString = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (depth === 0 && c === sep) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts.map((p) => p.trim()).filter((p) => p !== '');
}

function evalPipeline(text: string, ctx: Ctx): Value {
  let piped: Value[] = [];
  for (const cmd of split(text, '|')) piped = [evalCommand(cmd, ctx, piped)];
  return piped[0];
}

function evalCommand(text: string, ctx: Ctx, piped: Value[]): Value {
  const words = split(text, ' ');
  const [head, ...rest] = words;
  if (head === undefined) throw new Error(`empty command in "${text}"`);
  const isFunc = /^[a-zA-Z]\w*$/.test(head) || head === '.Files.Get';
  if (!isFunc) {
    if (rest.length || piped.length) throw new Error(`a value takes no arguments: "${text}"`);
    return evalArg(head, ctx);
  }
  return call(head, [...rest.map((w) => evalArg(w, ctx)), ...piped], ctx);
}

function evalArg(word: string, ctx: Ctx): Value {
  if (word.startsWith('(')) return evalPipeline(word.slice(1, -1), ctx);
  if (word.startsWith('"')) return JSON.parse(word) as string;
  if (/^-?\d+(\.\d+)?$/.test(word)) return Number(word);
  if (word === 'true' || word === 'false') return word === 'true';
  if (word.startsWith('.')) {
    let v: Value = { Values: ctx.Values, Release: ctx.Release, Chart: ctx.Chart };
    for (const key of word.slice(1).split('.')) v = v === null || v === undefined ? undefined : (v as Record<string, Value>)[key];
    return v;
  }
  throw new Error(`not understood: ${word}`);
}

function call(name: string, args: Value[], ctx: Ctx): Value {
  const a = (i: number): Value => args[i];
  switch (name) {
    case '.Files.Get':
      return ctx.files(String(a(0)));
    case 'toYaml':
      return toYaml(a(0)).replace(/\n$/, '');
    case 'toJson':
      return JSON.stringify(a(0));
    case 'nindent':
      return `\n${indent(Number(a(0)), stringOf(a(1)))}`;
    case 'indent':
      return indent(Number(a(0)), stringOf(a(1)));
    case 'quote':
      return JSON.stringify(stringOf(a(0)));
    case 'default':
      return truthy(a(1)) ? a(1) : a(0);
    case 'required':
      if (!truthy(a(1))) throw new Error(`required: ${String(a(0))}`);
      return a(1);
    case 'printf': {
      const rest = args.slice(1);
      return String(a(0)).replace(/%[vsqd%]/g, (f) => (f === '%%' ? '%' : f === '%q' ? JSON.stringify(stringOf(rest.shift())) : stringOf(rest.shift())));
    }
    case 'dict': {
      const o: Record<string, Value> = {};
      for (let i = 0; i + 1 < args.length; i += 2) o[String(args[i])] = args[i + 1];
      return o;
    }
    case 'merge':
      // Sprig: the first map's keys win.
      return args.slice(1).reduce<Record<string, Value>>((acc, src) => deepMerge(src as Record<string, Value>, acc), { ...(a(0) as Record<string, Value>) });
    case 'mul':
      return args.reduce<number>((p, v) => p * Number(v), 1);
    case 'div':
      return Math.trunc(Number(a(0)) / Number(a(1)));
    case 'not':
      return !truthy(a(0));
    default:
      throw new Error(`function not rendered by this helper: ${name}`);
  }
}

function truthy(v: Value): boolean {
  if (v === undefined || v === null || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v).length > 0;
  return true;
}

function stringOf(v: Value): string {
  if (v === undefined || v === null) return '';
  return typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v);
}

function indent(n: number, text: string): string {
  const pad = ' '.repeat(n);
  return text
    .split('\n')
    .map((l) => (l === '' ? l : pad + l))
    .join('\n');
}

/** Block YAML; scalars as JSON (valid YAML). */
function toYaml(v: Value, level = 0): string {
  const pad = '  '.repeat(level);
  if (Array.isArray(v)) {
    if (v.length === 0) return `${pad}[]\n`;
    return v.map((item) => (isNested(item) ? `${pad}-\n${toYaml(item, level + 1)}` : `${pad}- ${JSON.stringify(item)}\n`)).join('');
  }
  if (v !== null && typeof v === 'object') {
    const entries = Object.entries(v);
    if (entries.length === 0) return `${pad}{}\n`;
    return entries.map(([k, x]) => (isNested(x) ? `${pad}${k}:\n${toYaml(x, level + 1)}` : `${pad}${k}: ${JSON.stringify(x ?? null)}\n`)).join('');
  }
  return `${pad}${JSON.stringify(v)}\n`;
}

function isNested(v: Value): boolean {
  return v !== null && typeof v === 'object' && Object.keys(v).length > 0;
}

function deepMerge(base: Record<string, Value>, over: Record<string, Value>, nullRemoves = false): Record<string, Value> {
  const out: Record<string, Value> = { ...base };
  for (const [k, v] of Object.entries(over)) {
    const b = out[k];
    if (v === null && nullRemoves) delete out[k];
    else out[k] = v !== null && typeof v === 'object' && !Array.isArray(v) && b !== null && typeof b === 'object' && !Array.isArray(b) ? deepMerge(b as Record<string, Value>, v as Record<string, Value>, nullRemoves) : v;
  }
  return out;
}
