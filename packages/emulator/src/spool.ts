/**
 * Receives one uploaded file as it streams in: bytes are counted as they flow (the limit
 * is enforced while reading, never after buffering), small files stay in memory and larger
 * ones are written to a temporary file, so a request of many large files never sits in
 * memory. The text extractor reads the file back once, after the whole request arrived.
 */
import { randomUUID } from 'node:crypto';
import { open, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { EmulatorError } from './errors.js';

/** Files up to this size are kept in memory while the request is received. */
export const SPOOL_MEMORY_BYTES = 256 * 1024;

export interface SpooledFile {
  readonly size: number;
  read(): Promise<Buffer>;
  dispose(): Promise<void>;
}

export interface SpoolOptions {
  name: string;
  maxBytes: number;
  /** Directory for files larger than SPOOL_MEMORY_BYTES (created by the caller). */
  tempDir: () => Promise<string>;
}

/** The stream of a multipart part; busboy sets `truncated` when the size limit cut it. */
export type PartStream = Readable & { truncated?: boolean };

export async function spoolPart(stream: PartStream, opts: SpoolOptions): Promise<SpooledFile> {
  const memory: Buffer[] = [];
  let size = 0;
  let path: string | undefined;
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  const tooLarge = (): EmulatorError =>
    new EmulatorError(413, 'payload_too_large', `file "${opts.name}" is larger than the limit of ${opts.maxBytes} bytes`, {
      field: 'documents',
      file: opts.name,
    });
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > opts.maxBytes) throw tooLarge();
      if (handle) {
        await handle.write(chunk);
      } else if (size > SPOOL_MEMORY_BYTES) {
        path = join(await opts.tempDir(), `upload-${randomUUID()}`);
        handle = await open(path, 'w');
        for (const buffered of memory) await handle.write(buffered);
        memory.length = 0;
        await handle.write(chunk);
      } else {
        memory.push(chunk);
      }
    }
    if (stream.truncated) throw tooLarge();
  } catch (err) {
    await handle?.close().catch(() => {});
    if (path) await rm(path, { force: true }).catch(() => {});
    throw err;
  }
  await handle?.close();
  if (path === undefined) {
    const data = Buffer.concat(memory, size);
    return { size, read: async () => data, dispose: async () => {} };
  }
  const file = path;
  return {
    size,
    read: () => readFile(file),
    dispose: () => rm(file, { force: true }),
  };
}
