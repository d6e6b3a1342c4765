/** The bounds of one conversion (docs/formats.md, "Limits"); every one is named when hit. */
export interface ConvertLimits {
  /** Wall time of one file's conversion, in its worker. */
  timeMs: number;
  /** The worker's old-generation heap (V8 resourceLimits). */
  memoryMb: number;
  /** Bytes a container (zip) may expand to, all entries together. */
  decompressedBytes: number;
  /** Entries a container may hold. */
  zipEntries: number;
  /** Markdown produced for one file; past it the text is cut and the cut named. */
  outputBytes: number;
  /** Rows of one sheet or table; past it the rows are cut and the cut named. */
  rowsPerSheet: number;
}

export const DEFAULT_LIMITS: ConvertLimits = {
  timeMs: 30_000,
  memoryMb: 512,
  decompressedBytes: 256 * 1024 * 1024,
  zipEntries: 10_000,
  outputBytes: 8 * 1024 * 1024,
  rowsPerSheet: 10_000,
};

/** A file a converter cannot read, or a bound it went past: the conversion fails with this reason (a problem-list entry). */
export function limitError(limit: keyof ConvertLimits | 'format', message: string): Error & { code: string; limit: string } {
  return Object.assign(new Error(message), { code: 'E_CONVERT_LIMIT', limit });
}
