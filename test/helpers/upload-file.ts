/** Files of an upload for the client's tests: the upload opens nothing itself (api/records.ts UploadFile.open). */
import type { UploadFile } from '../../src/api/records.js';
import { openRegularFile } from '../../src/local/fs.js';

/** A file on disk, opened by path with the local side's checks when the upload reads it. */
export function onDisk(path: string, name: string, more: Partial<Omit<UploadFile, 'path' | 'name'>> = {}): UploadFile {
  return { path, name, open: () => openRegularFile(path), ...more };
}

/** The open of a test whose service never reads a file (FakeApi): it says so if it is called. */
export const neverOpened = (): Promise<never> => Promise.reject(new Error('this test opens no file'));
