/**
 * Child processes run plain node (Node 20 cannot strip types): this transpiles the state
 * modules, log.ts, and every module of the repository they import (followed through their
 * relative imports, so that a new import elsewhere does not break the children) into a temp
 * folder whose node_modules links to the repository's, so that a child can import the real
 * code under test.
 */
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export const repoRoot = fileURLToPath(new URL('../../../../', import.meta.url));

export interface TranspiledState {
  /** Folder holding src/state/*.js, src/log.js and what they import. */
  dir: string;
  /** file:// URL of a transpiled module, e.g. module('state/store.js'). */
  module(rel: string): string;
  cleanup(): Promise<void>;
}

export async function transpileState(): Promise<TranspiledState> {
  const dir = await mkdtemp(join(tmpdir(), 'dssync-state-js-'));
  const stateFiles = (await readdir(join(repoRoot, 'src/state'))).filter((f) => f.endsWith('.ts'));
  const sources = ['src/log.ts', ...stateFiles.map((f) => `src/state/${f}`)];
  const seen = new Set(sources);
  for (let i = 0; i < sources.length; i++) {
    const rel = sources[i]!;
    const text = await readFile(join(repoRoot, rel), 'utf8');
    // Relative imports (type-only ones vanish in the output, so they are not needed).
    for (const m of text.matchAll(/^import\s+(?!type\b)[^;]*?from\s+'(\.{1,2}\/[^']+)\.js';/gm)) {
      const dep = posix.normalize(posix.join(posix.dirname(rel), `${m[1]!}.ts`));
      if (!seen.has(dep)) {
        seen.add(dep);
        sources.push(dep);
      }
    }
    const out = ts.transpileModule(text, {
      fileName: rel,
      compilerOptions: {
        module: ts.ModuleKind.ESNext,
        target: ts.ScriptTarget.ES2022,
        verbatimModuleSyntax: true,
        esModuleInterop: true,
      },
    });
    const dest = join(dir, rel.replace(/\.ts$/, '.js'));
    await mkdir(dirname(dest), { recursive: true });
    await writeFile(dest, out.outputText);
  }
  await writeFile(join(dir, 'package.json'), '{"type":"module"}\n');
  await symlink(join(repoRoot, 'node_modules'), join(dir, 'node_modules'), 'dir');
  return {
    dir,
    module: (rel) => new URL(`file://${join(dir, 'src', rel)}`).href,
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}
