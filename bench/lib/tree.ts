/**
 * Test trees for the benchmarks: small documents of mixed text types (the kinds the service
 * reads and cuts into chunks without a heavy parser: txt, md, html), each with unique
 * content, spread over folders. Seeded, so every run builds the same tree.
 */
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { mapLimit, seeded } from './util.js';

export interface TreeSpec {
  files: number;
  /** Folders in all: ~sqrt of them are parents, the others leaves holding the files. */
  folders: number;
  minBytes: number;
  maxBytes: number;
  seed: number;
}

export interface TreeFile {
  rel: string;
  size: number;
}

const KINDS = [
  { ext: 'txt', share: 0.5 },
  { ext: 'md', share: 0.3 },
  { ext: 'html', share: 0.2 },
] as const;

const WORDS =
  'the of and to in a is that for it as was with be by on not he this are or his from at which but have an they you were her she there been one all we their has would when if so what up out no them about more into time can only other new some could these two may first then do any like my now over such our man me even most made after also did many before must through back years where much your way well down should because each just those people how too little state good very make world still own see men work long get here between both life being under never day same another know while last might us great old year off come since against go came right used take three'.split(
    ' ',
  );

/** The relative paths of a tree, in a stable order. */
export function treeLayout(spec: TreeSpec): TreeFile[] {
  const rnd = seeded(spec.seed);
  const parents = Math.max(1, Math.round(Math.sqrt(spec.folders)));
  const leaves = Math.max(1, spec.folders - parents);
  const out: TreeFile[] = [];
  for (let i = 0; i < spec.files; i++) {
    const leaf = i % leaves;
    const parent = leaf % parents;
    const r = rnd();
    let acc = 0;
    let ext: string = KINDS[0].ext;
    for (const k of KINDS) {
      acc += k.share;
      if (r < acc) {
        ext = k.ext;
        break;
      }
    }
    const size = Math.floor(spec.minBytes + rnd() * (spec.maxBytes - spec.minBytes + 1));
    out.push({ rel: `p${String(parent).padStart(3, '0')}/f${String(leaf).padStart(5, '0')}/doc-${String(i).padStart(6, '0')}.${ext}`, size });
  }
  return out;
}

/** Content of `size` bytes (about) for a file; `version` makes a changed file differ. */
export function contentFor(rel: string, size: number, version: number): Buffer {
  const ext = rel.slice(rel.lastIndexOf('.') + 1);
  const rnd = seeded(hashSeed(`${rel}#${version}`));
  const words = (n: number): string => {
    const w: string[] = [];
    for (let i = 0; i < n; i++) w.push(WORDS[Math.floor(rnd() * WORDS.length)]!);
    return w.join(' ');
  };
  const head = `${rel} version ${version}`;
  let body: string;
  const target = Math.max(64, size - 80);
  switch (ext) {
    case 'md':
      body = `# ${head}\n\n`;
      while (body.length < target) body += `## ${words(4)}\n\n${words(60)}.\n\n`;
      break;
    case 'html':
      body = `<!doctype html><html><head><title>${head}</title></head><body><h1>${head}</h1>\n`;
      while (body.length < target) body += `<p>${words(50)}.</p>\n`;
      body += '</body></html>\n';
      break;
    default:
      body = `${head}\n\n`;
      while (body.length < target) body += `${words(60)}.\n\n`;
  }
  return Buffer.from(body, 'utf8');
}

export function sha256(b: Buffer): string {
  return createHash('sha256').update(b).digest('hex');
}

/** Writes the tree under `root` (folders created as needed); returns its files. */
export async function writeTree(root: string, spec: TreeSpec): Promise<TreeFile[]> {
  const files = treeLayout(spec);
  const dirs = new Set(files.map((f) => f.rel.slice(0, f.rel.lastIndexOf('/'))));
  await mapLimit([...dirs], 32, async (d) => {
    await mkdir(join(root, d), { recursive: true });
  });
  await mapLimit(files, 64, async (f) => {
    await writeFile(join(root, f.rel), contentFor(f.rel, f.size, 0));
  });
  return files;
}

function hashSeed(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}
