/**
 * Sums `node --cpu-prof` profiles by part of the program, by file and by function
 * (docs/performance.md, "Where a first mirror's CPU goes, against 02839eb"):
 *
 *   node dist/bench/profile-summary.js [--top K] [--marginal BIG,SMALL] \
 *     --group NAME[=FILES] A.cpuprofile B.cpuprofile ... [--group NAME[=FILES] ...]
 *
 * A group's profiles are runs of the same thing (one thread each: give the main thread's
 * `CPU.*.PID.0.*.cpuprofile`, or the worker's apart); its figures are the mean per
 * profile. Figures are **samples**, not the profile's time deltas: on a loaded machine a
 * delta also holds the time the thread waited for a core, a sample does not (at the
 * default 1 ms interval a sample stands for about 1 ms of the thread's CPU). With FILES,
 * each row also gives samples per 1,000 files (= µs per file at 1 ms a sample); with
 * `--marginal BIG,SMALL`, (BIG − SMALL) / (files of BIG − files of SMALL) per 1,000 files.
 *
 * A sample counts for its leaf's part when the leaf is the collector, idle or V8's own
 * (`(program)`), module loading, hashing or JSON; otherwise for the nearest frame above it
 * that is dssync's (`dist/src/...`) or a package's: Node's internals (streams, events,
 * the fs callbacks) count for the code that called them.
 */
import { readFileSync } from 'node:fs';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
}

/** What a frame is: `src/<path>`, `pkg:<name>`, `node:<module>` or `(native) <name>`. */
export function frameKey(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (url === '') return functionName.startsWith('(') ? functionName : `(native) ${functionName}`;
  const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return `pkg:${pkg[1]}`;
  const src = /\/dist\/(src\/.*)$/.exec(url);
  if (src) return src[1]!;
  return url.replace(/^file:\/\//, '');
}

const OWNED = (key: string): boolean => key.startsWith('src/') || key.startsWith('pkg:');

/** The part a sample's owner (its nearest dssync or package frame) belongs to. */
const OWNER_PARTS: ReadonlyArray<readonly [RegExp, string]> = [
  [/^pkg:undici$/, 'undici (HTTP/1.1 client)'],
  [/^src\/api\/upload/, 'api/upload (the body, its file reads)'],
  [/^src\/api\//, 'api/ (client, pacer, exchange, decoding)'],
  [/^src\/state\//, 'state/ (file table, journal)'],
  [/^src\/engine\/plan/, 'engine/ planning'],
  [/^src\/engine\//, 'engine/ (mirror, executor, guards)'],
  [/^src\/local\/(fs|hash|sys-calls)/, 'local/ file calls and hashing'],
  [/^src\/local\//, 'local/ (walk, listing, filters)'],
  [/^(src\/log|pkg:(pino|sonic-boom|thread-stream|pino-std-serializers|fast-redact|@pinojs\/redact))/, 'logging'],
  [/^pkg:zod$/, 'zod (validation)'],
  [/^pkg:(yargs|yargs-parser|cliui|string-width|y18n|wrap-ansi)/, 'command line (yargs)'],
  [/^pkg:p-queue$|^pkg:eventemitter3$/, 'p-queue'],
  [/^src\/daemon\//, 'daemon/'],
  [/^src\/cli\//, 'cli/'],
  [/^src\//, 'src/ (other)'],
  [/^pkg:/, 'packages (other)'],
];

/** Node's own code with no dssync or package frame above it, by what it is. */
const INTERNAL_PARTS: ReadonlyArray<readonly [RegExp, string]> = [
  [/^node:(internal\/)?(fs|internal\/fs)/, 'node: fs callbacks'],
  [/^node:(net|internal\/(streams|stream_base_commons|net))|^node:stream/, 'node: sockets and streams'],
  [/^node:internal\/(worker|per_context\/messageport)/, 'node: worker messages'],
  [/^node:internal\/(process\/task_queues|timers)|^node:timers/, 'node: microtasks and timers'],
];

/** The part one sample counts for, from its stack (leaf first). */
export function partOf(stack: readonly string[]): string {
  const leaf = stack[0] ?? '(root)';
  if (leaf === '(garbage collector)') return 'garbage collector';
  if (leaf === '(idle)') return '(idle)';
  if (leaf === '(program)') return 'V8 (program)';
  if (stack.some((k) => k.startsWith('node:internal/modules/') || k === '(native) compileSourceTextModule'))
    return 'start-up: module loading';
  if (stack.some((k) => k === 'node:internal/crypto/hash')) return 'hashing (SHA-256)';
  if (leaf === '(native) parse' || leaf === '(native) stringify') return 'JSON';
  const owner = stack.find(OWNED);
  if (owner !== undefined) return OWNER_PARTS.find(([re]) => re.test(owner))?.[1] ?? owner;
  return INTERNAL_PARTS.find(([re]) => stack.some((k) => re.test(k)))?.[1] ?? `node: other (${leaf})`;
}

/** A sampling heap profile (`HeapProfiler.stopSampling`'s `profile`): a tree of frames with the bytes each allocated itself. */
export interface HeapNode {
  callFrame: CallFrame;
  selfSize: number;
  children: HeapNode[];
}

/**
 * Bytes allocated by part (partOf, as a CPU sample is charged), from a heap profile taken with
 * the objects collected since included (bench/cpu-ab.ts `--alloc`): what the program allocated,
 * not what it kept.
 */
export function heapParts(head: HeapNode): Map<string, number> {
  const parts = new Map<string, number>();
  const walk = (node: HeapNode, above: readonly string[]): void => {
    const stack = [frameKey(node.callFrame), ...above];
    if (node.selfSize > 0) bump(parts, stack[0] === '(V8 API)' ? "native code's objects ((V8 API): messages, results)" : partOf(stack), node.selfSize);
    for (const child of node.children) walk(child, stack);
  };
  walk(head, []);
  return parts;
}

interface Tally {
  busy: number;
  idle: number;
  parts: Map<string, number>;
  owners: Map<string, number>;
  self: Map<string, number>;
  total: Map<string, number>;
}

const bump = (m: Map<string, number>, k: string, n = 1): void => {
  m.set(k, (m.get(k) ?? 0) + n);
};

/** One profile's samples summed by part, owner file, leaf function, and function in the stack. */
export function tally(profile: Profile): Tally {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const stacks = new Map<number, ProfileNode[]>();
  const stackOf = (id: number): ProfileNode[] => {
    let s = stacks.get(id);
    if (s === undefined) {
      s = [];
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) s.push(byId.get(at)!);
      stacks.set(id, s);
    }
    return s;
  };
  const name = (n: ProfileNode): string =>
    `${n.callFrame.functionName || '(anonymous)'} ${frameKey(n.callFrame)}:${n.callFrame.lineNumber + 1}`;
  const t: Tally = { busy: 0, idle: 0, parts: new Map(), owners: new Map(), self: new Map(), total: new Map() };
  for (const id of profile.samples) {
    const nodes = stackOf(id);
    const keys = nodes.map((n) => frameKey(n.callFrame));
    const part = partOf(keys);
    if (part === '(idle)') {
      t.idle++;
      continue;
    }
    t.busy++;
    bump(t.parts, part);
    bump(t.owners, keys.find(OWNED) ?? keys[0]!);
    bump(t.self, name(nodes[0]!));
    for (const fn of new Set(nodes.filter((n) => n.callFrame.url !== '').map(name))) bump(t.total, fn);
  }
  return t;
}

interface Group {
  name: string;
  files: number | undefined;
  tallies: Tally[];
}

function parseArgs(argv: readonly string[]): { groups: Group[]; top: number; marginals: Array<[string, string]> } {
  const groups: Group[] = [];
  let top = 25;
  const marginals: Array<[string, string]> = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--top') top = Number(argv[++i]);
    else if (a === '--marginal') {
      const [big, small] = (argv[++i] ?? '').split(',');
      if (big === undefined || small === undefined) throw new Error('--marginal: give BIG,SMALL (two group names)');
      marginals.push([big, small]);
    } else if (a === '--group') {
      const [name, files] = (argv[++i] ?? '').split('=');
      if (!name) throw new Error('--group: give NAME or NAME=FILES');
      groups.push({ name, files: files === undefined ? undefined : Number(files), tallies: [] });
    } else {
      const g = groups.at(-1);
      if (g === undefined) throw new Error(`${a}: a profile before any --group`);
      g.tallies.push(tally(JSON.parse(readFileSync(a, 'utf8')) as Profile));
    }
  }
  return { groups, top, marginals };
}

const mean = (g: Group, pick: (t: Tally) => number): number =>
  g.tallies.reduce((s, t) => s + pick(t), 0) / Math.max(1, g.tallies.length);

function table(title: string, groups: Group[], pick: (t: Tally) => Map<string, number>, top: number, marginals: Array<[string, string]>): string {
  const keys = new Map<string, number>();
  for (const g of groups) for (const t of g.tallies) for (const [k, n] of pick(t)) bump(keys, k, n);
  const rows = [...keys].sort((a, b) => b[1] - a[1]).slice(0, top).map(([k]) => k);
  const pairs = marginals.map(([big, small]) => {
    const [b, s] = [groups.find((g) => g.name === big), groups.find((g) => g.name === small)];
    if (!b?.files || !s?.files) throw new Error(`--marginal ${big},${small}: two groups with FILES`);
    return [b, s] as const;
  });
  const head = [
    ...groups.flatMap((g) => [`${g.name} samples`, '%', ...(g.files ? ['per 1k files'] : [])]),
    ...pairs.map(([b, s]) => `marginal ${b.name} − ${s.name} per 1k files`),
  ];
  const fmt = (x: number): string => (x >= 100 || x <= -100 ? x.toFixed(0) : x.toFixed(1));
  const value = (g: Group, k: string): number => mean(g, k === 'busy (all)' ? (t) => t.busy : (t) => pick(t).get(k) ?? 0);
  const lines = [`### ${title}`, '', `| | ${head.join(' | ')} |`, `|---|${head.map(() => '---:').join('|')}|`];
  for (const k of [...rows, 'busy (all)']) {
    const cells = [
      ...groups.flatMap((g) => {
        const n = value(g, k);
        return [fmt(n), ((100 * n) / mean(g, (t) => t.busy)).toFixed(1), ...(g.files ? [fmt((1000 * n) / g.files)] : [])];
      }),
      ...pairs.map(([b, s]) => fmt((1000 * (value(b, k) - value(s, k))) / (b.files! - s.files!))),
    ];
    lines.push(`| ${k.replace(/\|/g, '\\|')} | ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

function main(): void {
  const { groups, top, marginals } = parseArgs(process.argv.slice(2));
  if (groups.length === 0) throw new Error('usage: profile-summary.js [--top K] [--marginal BIG,SMALL] --group NAME[=FILES] PROFILE...');
  const counts = groups.map((g) => `${g.name}: ${g.tallies.length} profiles, busy ${mean(g, (t) => t.busy).toFixed(0)} samples, idle ${mean(g, (t) => t.idle).toFixed(0)}`);
  console.log([
    counts.join('; '),
    '',
    table('By part', groups, (t) => t.parts, 40, marginals),
    '',
    table('By file (the nearest dssync or package frame)', groups, (t) => t.owners, top, marginals),
    '',
    table('By function, self', groups, (t) => t.self, top, marginals),
    '',
    table('By function, total (in the stack)', groups, (t) => t.total, top, marginals),
  ].join('\n'));
}

if (import.meta.url === `file://${process.argv[1]}`) main();
