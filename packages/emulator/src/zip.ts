/**
 * Reads one entry of a zip archive held in memory (ODT's content.xml). Only what ODT
 * needs: stored or deflated entries, no zip64, no encryption. Output is capped so a
 * crafted archive cannot exhaust memory.
 */
import { inflateRawSync } from 'node:zlib';

const EOCD_SIGNATURE = 0x06054b50;
const CENTRAL_SIGNATURE = 0x02014b50;
const LOCAL_SIGNATURE = 0x04034b50;

export function readZipEntry(zip: Buffer, entryName: string, maxBytes = 64 * 1024 * 1024): Buffer {
  const eocd = findEndOfCentralDirectory(zip);
  const count = zip.readUInt16LE(eocd + 10);
  let at = zip.readUInt32LE(eocd + 16);
  for (let i = 0; i < count; i++) {
    if (at + 46 > zip.length || zip.readUInt32LE(at) !== CENTRAL_SIGNATURE) throw new Error('corrupt zip: bad central directory');
    const method = zip.readUInt16LE(at + 10);
    const compressedSize = zip.readUInt32LE(at + 20);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    const localOffset = zip.readUInt32LE(at + 42);
    const name = zip.toString('utf8', at + 46, at + 46 + nameLength);
    if (name === entryName) return readLocalEntry(zip, localOffset, method, compressedSize, maxBytes);
    at += 46 + nameLength + extraLength + commentLength;
  }
  throw new Error(`zip has no entry ${entryName}`);
}

function findEndOfCentralDirectory(zip: Buffer): number {
  const stop = Math.max(0, zip.length - 22 - 0xffff);
  for (let at = zip.length - 22; at >= stop; at--) {
    if (zip.readUInt32LE(at) === EOCD_SIGNATURE) return at;
  }
  throw new Error('not a zip archive (no end of central directory)');
}

function readLocalEntry(zip: Buffer, offset: number, method: number, compressedSize: number, maxBytes: number): Buffer {
  if (offset + 30 > zip.length || zip.readUInt32LE(offset) !== LOCAL_SIGNATURE) throw new Error('corrupt zip: bad local header');
  const start = offset + 30 + zip.readUInt16LE(offset + 26) + zip.readUInt16LE(offset + 28);
  const end = start + compressedSize;
  if (end > zip.length) throw new Error('corrupt zip: entry runs past the end of the archive');
  const data = zip.subarray(start, end);
  if (method === 0) return data;
  if (method === 8) return inflateRawSync(data, { maxOutputLength: maxBytes });
  throw new Error(`zip entry uses unsupported compression method ${method}`);
}
