/**
 * What the folder lister (folder-lister.ts) and its worker (lister-worker.ts) say to each
 * other: the requests, the answers, and the slots of the shared Int32Array: [BUSY] 1 while
 * the worker works, [STOP] 1 once it must stop, [PROGRESS] a count it bumps as it moves on
 * (a system call made, a request answered): what a caller's ListingProgress reads.
 */
import type { FolderListing } from './folder-listing.js';
import type { HashRequest, RawHash } from './hash-steps.js';

export const BUSY = 0;
export const STOP = 1;
export const PROGRESS = 2;
export const FLAGS = 3;

export type ListerRequest = { id: number; path: string; noFollow: boolean } | { id: number; hash: HashRequest } | { stop: true };

export type ListerAnswer = { id: number; listing: FolderListing } | { id: number; hashed: RawHash } | { id: number; error: { code: string; message: string; step?: string | undefined } };
