/**
 * Local churn on a mapped folder, the way people and programs change a shared drive: new
 * files, edits (in place and editors' atomic saves), renames and moves, deletions. Seeded,
 * so a run can be replayed. It keeps the list of live files it knows of.
 */
import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { sleep } from './util.js';

export interface ChurnCounts {
  adds: number;
  edits: number;
  renames: number;
  deletes: number;
}

export class Churn {
  readonly counts: ChurnCounts = { adds: 0, edits: 0, renames: 0, deletes: 0 };
  private live: string[] = [];
  private next = 0;
  private running: Promise<void> | undefined;
  private stopRequested = false;

  constructor(
    readonly root: string,
    private readonly random: () => number,
    private readonly dirs = 50,
  ) {}

  /** Writes `n` new files spread over the folders (the initial tree). */
  async seed(n: number, size = 600): Promise<void> {
    for (let i = 0; i < n; i++) await this.addOne(size, false);
  }

  /** Re-reads the live list from disk (after something else changed the tree). */
  async rescan(): Promise<void> {
    const out: string[] = [];
    const walk = async (d: string): Promise<void> => {
      for (const e of await readdir(d, { withFileTypes: true })) {
        if (e.name.startsWith('.')) continue;
        const abs = join(d, e.name);
        if (e.isDirectory()) await walk(abs);
        else if (e.isFile()) out.push(relative(this.root, abs).split(sep).join('/'));
      }
    };
    await walk(this.root);
    this.live = out;
  }

  get files(): readonly string[] {
    return this.live;
  }

  /** One random operation: 40 % add, 30 % edit, 15 % rename, 15 % delete. */
  async step(): Promise<void> {
    const r = this.random();
    if (r < 0.4 || this.live.length < 10) await this.addOne(600, true);
    else if (r < 0.7) await this.edit();
    else if (r < 0.85) await this.renameOne();
    else await this.deleteOne();
  }

  /** Runs `step()` about `perSecond` times a second until stop(). */
  start(perSecond: number): void {
    if (this.running) return;
    this.stopRequested = false;
    const gap = 1000 / perSecond;
    this.running = (async () => {
      while (!this.stopRequested) {
        try {
          await this.step();
        } catch (e) {
          // The tree changed under us (a scenario moved the root away): look again.
          if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
          await this.rescan().catch(() => undefined);
        }
        await sleep(gap * (0.5 + this.random()));
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopRequested = true;
    await this.running;
    this.running = undefined;
  }

  private content(size: number): string {
    const head = `file ${this.next} ${this.random().toString(36).slice(2)} ${Date.now()}\n`;
    return head + 'lorem ipsum dolor sit amet '.repeat(Math.max(1, Math.floor((size * (0.5 + this.random())) / 27)));
  }

  private async addOne(size: number, counted: boolean): Promise<void> {
    const rel = `d${Math.floor(this.random() * this.dirs)}/f${this.next++}.txt`;
    const abs = join(this.root, rel);
    await mkdir(dirname(abs), { recursive: true });
    await writeFile(abs, this.content(size));
    this.live.push(rel);
    if (counted) this.counts.adds++;
  }

  private pick(): number {
    return Math.floor(this.random() * this.live.length);
  }

  private async edit(): Promise<void> {
    const rel = this.live[this.pick()]!;
    const abs = join(this.root, rel);
    if (this.random() < 0.5) {
      await writeFile(abs, this.content(600), { flag: 'r+' });
    } else {
      // An editor's atomic save: write a hidden temp file, rename it over the original.
      const tmp = join(dirname(abs), `.${this.next++}.tmp`);
      await writeFile(tmp, this.content(600));
      await rename(tmp, abs);
    }
    this.counts.edits++;
  }

  private async renameOne(): Promise<void> {
    const i = this.pick();
    const rel = this.live[i]!;
    const to = `d${Math.floor(this.random() * this.dirs)}/r${this.next++}.txt`;
    await mkdir(dirname(join(this.root, to)), { recursive: true });
    await rename(join(this.root, rel), join(this.root, to));
    this.live[i] = to;
    this.counts.renames++;
  }

  private async deleteOne(): Promise<void> {
    const i = this.pick();
    const rel = this.live[i]!;
    await rm(join(this.root, rel));
    this.live.splice(i, 1);
    this.counts.deletes++;
  }
}
