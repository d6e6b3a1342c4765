// Line counts of the largest files and the longest functions in src/ (issue 27.3's measure):
// `node scripts/code-size.mjs [N] [CHECKOUT]` (another checkout: a before/after table).
// Functions are found by the TypeScript parser.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const top = Number(process.argv[2] ?? 10);
const root = process.argv[3] ?? new URL('..', import.meta.url).pathname;
const files = [];
const walk = (dir) => {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (p.endsWith('.ts')) files.push(p);
  }
};
walk(join(root, 'src'));

const sizes = [];
const functions = [];
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  const rel = relative(root, file);
  sizes.push({ rel, lines: text.split('\n').length - (text.endsWith('\n') ? 1 : 0) });
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const visit = (node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const first = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const last = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      const name = ts.isConstructorDeclaration(node) ? 'constructor' : node.name?.getText(sf) ?? (ts.isVariableDeclaration(node.parent) ? node.parent.name.getText(sf) : '(anonymous)');
      functions.push({ where: `${rel}:${first + 1}`, name, lines: last - first + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
}
sizes.sort((a, b) => b.lines - a.lines);
functions.sort((a, b) => b.lines - a.lines);
console.log(`largest files (lines):`);
for (const s of sizes.slice(0, top)) console.log(`  ${String(s.lines).padStart(5)}  ${s.rel}`);
console.log(`longest functions (lines):`);
for (const f of functions.slice(0, top)) console.log(`  ${String(f.lines).padStart(5)}  ${f.name}  ${f.where}`);
