/**
 * An answer's body as it came: the chunks undici handed over, never joined into one buffer
 * of its own. A listing's page (~0.65 MB for 1,000 documents) joined into a fresh buffer is,
 * under dssync's malloc settings (`MALLOC_MMAP_THRESHOLD_`, cli/malloc-env.ts), a fresh
 * mapping of the kernel's each time, whose pages fault in one by one as they are written:
 * ~1.7 ms a page on a 2-core VM, spent before the next page could be asked for (the next
 * page's cursor is in the answer's last bytes). Its text is decoded through one scratch
 * buffer that every answer reuses instead (docs/performance.md, "Session 31").
 */

/** The largest answer decoded through the scratch buffer (which keeps the size of the largest so decoded). */
const SCRATCH_MAX_BYTES = 2 * 1024 * 1024;

let scratch: Buffer | undefined;

export class ResponseBody {
  /** Bytes in all. */
  readonly length: number;

  constructor(private chunks: readonly Buffer[]) {
    let n = 0;
    for (const c of chunks) n += c.length;
    this.length = n;
  }

  static of(content: string | Buffer): ResponseBody {
    return new ResponseBody([typeof content === 'string' ? Buffer.from(content) : content]);
  }

  /** The body as UTF-8 text, as Buffer.toString('utf8') decodes it. */
  text(): string {
    const { chunks, length } = this;
    if (chunks.length === 0) return '';
    if (chunks.length === 1) return chunks[0]!.toString('utf8');
    if (length > SCRATCH_MAX_BYTES) return Buffer.concat(chunks, length).toString('utf8');
    if (scratch === undefined || scratch.length < length) scratch = Buffer.allocUnsafeSlow(Math.min(SCRATCH_MAX_BYTES, 2 ** Math.ceil(Math.log2(Math.max(length, 64 * 1024)))));
    let at = 0;
    for (const c of chunks) at += c.copy(scratch, at);
    // toString copies the bytes out: the scratch is free again once it returns.
    return scratch.toString('utf8', 0, length);
  }

  /**
   * Holds the body as one buffer of its own from now on: for an answer kept a while (a
   * listing's page fetched ahead, list-pages.ts PageChain). Its chunks sit in malloc's arenas
   * among whatever is allocated meanwhile, and once freed would stay resident behind it; one
   * buffer of this size is a mapping of its own, returned to the kernel when it goes.
   */
  compact(): void {
    if (this.chunks.length > 1) this.chunks = [Buffer.concat(this.chunks, this.length)];
  }

  /** The body's last `n` bytes (all of it when shorter). */
  tail(n: number): Buffer {
    const { chunks } = this;
    const last = chunks[chunks.length - 1];
    if (last === undefined) return Buffer.alloc(0);
    if (last.length >= n || chunks.length === 1) return last.subarray(Math.max(0, last.length - n));
    const parts: Buffer[] = [];
    let need = n;
    for (let i = chunks.length - 1; i >= 0 && need > 0; i--) {
      const c = chunks[i]!;
      const part = c.length > need ? c.subarray(c.length - need) : c;
      parts.unshift(part);
      need -= part.length;
    }
    return Buffer.concat(parts);
  }
}
