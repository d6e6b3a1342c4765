/**
 * No import cycle in src/, type-only imports included (issue 38.5): between modules, and
 * between folders (a folder imports another only when that one does not import it back,
 * through any path). The graph is read by the TypeScript parser from every relative import,
 * export-from and dynamic import.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = resolve(import.meta.dirname, '../../src');

type Graph = Map<string, string[]>;

function importGraph(): Graph {
  const files = readdirSync(SRC, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  const graph: Graph = new Map();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(join(SRC, file), 'utf8'), true, true);
    const targets = importedFiles
      .filter((r) => r.fileName.startsWith('.'))
      .map((r) => resolve(SRC, dirname(file), r.fileName).replace(/\.js$/, '.ts'))
      .filter((t) => existsSync(t))
      .map((t) => relative(SRC, t));
    graph.set(file, targets);
  }
  return graph;
}

/** The strongly connected components of more than one node (Tarjan): each is a cycle. */
function cycles(graph: Graph): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || graph.get(v)?.includes(v)) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

const folderOf = (file: string): string => (file.includes('/') ? file.slice(0, file.indexOf('/')) : file);

describe('the import graph of src/', () => {
  const graph = importGraph();

  it('has no cycle between modules, type-only imports included', () => {
    expect(graph.size).toBeGreaterThan(100);
    expect(cycles(graph)).toEqual([]);
  });

  it('has no cycle between folders (issue 38.5: the upload reads the opened file of a port, api/records.ts)', () => {
    const folders: Graph = new Map();
    for (const [from, targets] of graph) {
      for (const to of targets) {
        if (folderOf(from) === folderOf(to)) continue;
        const list = folders.get(folderOf(from)) ?? [];
        if (!list.includes(folderOf(to))) folders.set(folderOf(from), [...list, folderOf(to)]);
      }
    }
    expect(cycles(folders)).toEqual([]);
  });

  it('finds a cycle when there is one', () => {
    const g: Graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['a.ts']],
    ]);
    expect(cycles(g)).toEqual([['a.ts', 'b.ts', 'c.ts']]);
  });
});
