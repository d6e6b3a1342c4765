/**
 * bench/profile-summary.ts: how a `--cpu-prof` sample is charged (docs/performance.md,
 * "Where a first mirror's CPU goes, against 02839eb"): Node's internals count for the
 * nearest dssync or package frame above them, idle samples are not busy time, and the
 * collector, module loading and hashing are parts of their own whatever called them.
 */
import { describe, expect, it } from 'vitest';
import { frameKey, heapParts, partOf, tally, type HeapNode } from '../../../bench/profile-summary.js';

const DIST = 'file:///work/wt/dist';
const frame = (functionName: string, url: string) => ({ functionName, url, lineNumber: 0 });

/** A profile of one chain root > ...frames (leaf last), each sampled `hits[i]` times. */
function profile(chain: Array<{ functionName: string; url: string; lineNumber: number }>, samples: number[]) {
  const nodes = chain.map((callFrame, i) => ({ id: i + 1, callFrame, children: i + 1 < chain.length ? [i + 2] : [] }));
  return { nodes, samples };
}

describe('profile-summary', () => {
  it('names a frame by its dssync file, its package or Node module', () => {
    expect(frameKey(frame('send', `${DIST}/src/api/http.js`))).toBe('src/api/http.js');
    expect(frameKey(frame('write', 'file:///x/node_modules/undici/lib/dispatcher/client-h1.js'))).toBe('pkg:undici');
    expect(frameKey(frame('x', 'file:///x/node_modules/@pinojs/redact/index.js'))).toBe('pkg:@pinojs/redact');
    expect(frameKey(frame('emit', 'node:events'))).toBe('node:events');
    expect(frameKey(frame('fstat', ''))).toBe('(native) fstat');
    expect(frameKey(frame('(garbage collector)', ''))).toBe('(garbage collector)');
  });

  it("charges Node's internals and native calls to the nearest dssync or package frame", () => {
    expect(partOf(['(native) fstat', 'node:fs', 'src/local/fs.js', 'src/api/upload.js'])).toBe('local/ file calls and hashing');
    expect(partOf(['node:internal/streams/readable', 'pkg:undici', 'src/api/http.js'])).toBe('undici (HTTP/1.1 client)');
    expect(partOf(['node:internal/streams/readable', 'node:net'])).toBe('node: sockets and streams');
  });

  it('keeps the collector, module loading and hashing apart from their callers', () => {
    expect(partOf(['(garbage collector)', 'src/api/http.js'])).toBe('garbage collector');
    expect(partOf(['(native) compileSourceTextModule', 'node:internal/modules/esm/utils', 'src/cli/main.js'])).toBe('start-up: module loading');
    expect(partOf(['(native) update', 'node:internal/crypto/hash', 'src/api/upload.js'])).toBe('hashing (SHA-256)');
  });

  it('counts idle samples apart from busy ones, and each function once per sample in the total', () => {
    const p = profile([frame('(root)', ''), frame('outer', `${DIST}/src/engine/executor.js`), frame('inner', `${DIST}/src/engine/executor.js`), frame('fstat', '')], [4, 4, 3]);
    p.nodes.push({ id: 5, callFrame: frame('(idle)', ''), children: [] });
    p.nodes[0]!.children.push(5);
    p.samples.push(5, 5);
    const t = tally(p);
    expect(t.busy).toBe(3);
    expect(t.idle).toBe(2);
    expect(t.parts.get('engine/ (mirror, executor, guards)')).toBe(3);
    expect(t.self.get('fstat (native) fstat:1')).toBe(2);
    expect(t.self.get('inner src/engine/executor.js:1')).toBe(1);
    expect(t.total.get('outer src/engine/executor.js:1')).toBe(3);
  });

  it("charges a heap profile's bytes as a CPU sample is charged, each node's own bytes once", () => {
    const node = (functionName: string, url: string, selfSize: number, children: HeapNode[] = []): HeapNode => ({ callFrame: frame(functionName, url), selfSize, children });
    const head = node('(root)', '', 0, [
      node('(V8 API)', '', 300),
      node('send', `${DIST}/src/api/http.js`, 100, [node('Request', 'file:///x/node_modules/undici/lib/core/request.js', 40), node('emit', 'node:events', 7)]),
      node('writeRecord', `${DIST}/src/state/journal.js`, 20, [node('(garbage collector)', '', 0)]),
    ]);
    expect(Object.fromEntries(heapParts(head))).toEqual({
      "native code's objects ((V8 API): messages, results)": 300,
      'api/ (client, pacer, exchange, decoding)': 107,
      'undici (HTTP/1.1 client)': 40,
      'state/ (file table, journal)': 20,
    });
  });
});
