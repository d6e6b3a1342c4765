/**
 * `dssync documents list | get | upload | update | delete` (DESIGN §6).
 * Each operation takes a CliContext, so it can run against a fake client in tests;
 * the yargs handlers only validate arguments and build the context.
 */
import { open, stat } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import type { CommandModule } from 'yargs';
import type { DocumentRecord, DocumentUpdate, JsonObject, UploadFile } from '../../api/records.js';
import { META } from '../../engine/metadata.js';
import {
  explainNotFound,
  missingDataSourceMessage,
  missingDocumentMessage,
  requireValue,
  withContext,
  type CliContext,
} from '../context.js';
import { ingestionStatus } from '../../api/ingestion-status.js';
import { CliError, usageError } from '../exit.js';
import { commandGroup, DOC, DS, wideOption, withDoc, withDs, type DocArgs, type DsArgs, type GlobalArgs } from '../options.js';
import { errnoOf } from '../../errors/errno.js';
import { openRegularFile } from '../../local/fs.js';
import {
  formatDocument,
  formatDocuments,
  formatJsonDeleted,
  formatJsonRecord,
  formatJsonRecords,
} from '../output.js';

// ---- argument checks ---------------------------------------------------------------

/** `--metadata` must be a JSON object; anything else is a usage error naming the option. */
export function parseMetadata(text: string): JsonObject {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw usageError(`--metadata is not valid JSON (${(e as Error).message}); give an object, e.g. --metadata '{"team":"hr"}'`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    const kind = value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`;
    throw usageError(`--metadata must be a JSON object, not ${kind}; e.g. --metadata '{"team":"hr"}'`);
  }
  return value as JsonObject;
}

/** `--url` must be an absolute URL: the interface types it as "address of the document, a URL". */
export function parseUrl(text: string): string {
  const url = text.trim();
  try {
    new URL(url);
  } catch {
    throw usageError(`--url "${text}" is not an absolute URL (e.g. https://intranet.example.com/handbook.pdf)`);
  }
  return url;
}

/**
 * Checks every file before anything is sent, so that a typo never leaves half a batch
 * uploaded: each must exist, be a regular file and be readable. Returns the files to
 * send (absolute path, name = the file's base name, size and mtime as seen now, so that
 * the client notices a file that changes before it is sent).
 */
export async function checkUploadFiles(paths: readonly string[]): Promise<UploadFile[]> {
  const problems: string[] = [];
  const files: UploadFile[] = [];
  for (const given of paths) {
    const path = resolve(given);
    try {
      const st = await stat(path);
      if (st.isDirectory()) {
        problems.push(`${given}: is a directory (name the files inside it)`);
        continue;
      }
      if (!st.isFile()) {
        problems.push(`${given}: is not a regular file`);
        continue;
      }
      // stat does not tell whether we may read it; opening does.
      await (await open(path, 'r')).close();
      files.push({ path, name: basename(path), expectedSize: st.size, expectedMtimeMs: st.mtimeMs, open: () => openRegularFile(path) });
    } catch (e) {
      const code = errnoOf(e) ?? 'error';
      problems.push(`${given}: ${code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : `cannot be read (${code})`}`);
    }
  }
  if (problems.length > 0) {
    throw usageError(`cannot upload ${problems.join('; ')}. Nothing was sent.`);
  }
  // Each document is named after its file, and the client matches the service's answer
  // to the files by name: two files with one name would be indistinguishable.
  const seen = new Map<string, string>();
  for (const f of files) {
    const other = seen.get(f.name);
    if (other !== undefined) {
      throw usageError(`cannot upload two files with the same name "${f.name}" in one request (${other}, ${f.path}). Nothing was sent.`);
    }
    seen.set(f.name, f.path);
  }
  return files;
}

export interface DocumentChanges {
  name?: string | undefined;
  url?: string | undefined;
  metadata?: JsonObject | undefined;
}

const OWN_KEYS: ReadonlySet<string> = new Set(Object.values(META));

/** Keys that dssync writes into a document's metadata to recognise its own documents. */
export function isDssyncMetadataKey(key: string): boolean {
  return OWN_KEYS.has(key) || key.startsWith('dssync_');
}

/**
 * The body of a document update: the fields given, and the current values of the rest
 * (DESIGN §3: always all three, so the result does not depend on whether the service
 * keeps or clears absent fields). A field the service holds as null (absent from the
 * record) and not given is left out of the body: sending null could be refused, and
 * leaving it out cannot change a field that holds nothing.
 *
 * New metadata replaces the old, except dssync's own keys, which are kept (unless the
 * new metadata sets them): without them the daemon would no longer recognise a mirrored
 * document as its own and would upload the file again.
 */
export function documentUpdateBody(current: DocumentRecord, changes: DocumentChanges): Partial<DocumentUpdate> {
  const body: Partial<DocumentUpdate> = {};
  const name = changes.name ?? current.name;
  const url = changes.url ?? current.url;
  let metadata = changes.metadata ?? current.metadata;
  if (changes.metadata !== undefined && current.metadata !== undefined) {
    const kept = Object.entries(current.metadata).filter(([k]) => isDssyncMetadataKey(k) && !(k in changes.metadata!));
    if (kept.length > 0) metadata = { ...changes.metadata, ...Object.fromEntries(kept) };
  }
  if (name !== undefined) body.name = name;
  if (url !== undefined) body.url = url;
  if (metadata !== undefined) body.metadata = metadata;
  return body;
}

// ---- operations --------------------------------------------------------------------

export async function listDocuments(ctx: CliContext, ds: string): Promise<void> {
  const records = await explainNotFound(() => ctx.api.listDocuments(ds), () => missingDataSourceMessage(ds));
  ctx.out(ctx.json ? formatJsonRecords(records) : formatDocuments(records, { wide: ctx.wide }));
}

async function fetchDocument(ctx: CliContext, ds: string, doc: string): Promise<DocumentRecord> {
  return explainNotFound(() => ctx.api.getDocument(ds, doc), () => missingDocumentMessage(ctx.api, ds, doc));
}

export async function getDocument(ctx: CliContext, ds: string, doc: string): Promise<void> {
  const record = await fetchDocument(ctx, ds, doc);
  ctx.out(ctx.json ? formatJsonRecord(record) : formatDocument(record));
}

/** All files in one request (DESIGN §6); the files were checked before. */
export async function uploadDocuments(ctx: CliContext, ds: string, files: UploadFile[]): Promise<void> {
  const records = await explainNotFound(() => ctx.api.uploadDocuments(ds, files), () => missingDataSourceMessage(ds));
  if (ctx.json) {
    ctx.out(formatJsonRecords(records));
    return;
  }
  const noun = records.length === 1 ? 'document' : 'documents';
  ctx.out(`Uploaded ${records.length} ${noun} to data source ${ds}.\n${formatDocuments(records, { wide: ctx.wide })}`);
  // Sent, but the service says it could not read them: not a success for the operator.
  const failed = records.filter((r) => ingestionStatus(r)?.failed);
  if (failed.length > 0) {
    throw new CliError(`the service could not ingest ${failed.length} of the uploaded ${noun} (see STATUS): ${failed.map((r) => `${r.name ?? r.id}: ${ingestionStatus(r)?.reason ?? ingestionStatus(r)?.status ?? ''}`).join('; ')}`);
  }
}

/** Reads the document, then sends all its fields with the given ones changed. */
export async function updateDocument(ctx: CliContext, ds: string, doc: string, changes: DocumentChanges): Promise<void> {
  const current = await fetchDocument(ctx, ds, doc);
  // The interface's update takes name, url and metadata; a field the service holds as
  // null is left out (see documentUpdateBody), which the DocumentUpdate type cannot say.
  const body = documentUpdateBody(current, changes) as DocumentUpdate;
  const record = await explainNotFound(
    () => ctx.api.updateDocument(ds, doc, body),
    () => missingDocumentMessage(ctx.api, ds, doc),
  );
  ctx.out(ctx.json ? formatJsonRecord(record) : `Updated document ${record.id}.\n${formatDocument(record)}`);
}

/** Looks the document up first: the service's DELETE treats an unknown id as already gone. */
export async function deleteDocument(ctx: CliContext, ds: string, doc: string): Promise<void> {
  await fetchDocument(ctx, ds, doc);
  await ctx.api.deleteDocument(ds, doc);
  ctx.out(ctx.json ? formatJsonDeleted(doc) : `Deleted document ${doc} from data source ${ds}.\n`);
}

// ---- yargs -------------------------------------------------------------------------

interface UploadArgs extends DsArgs {
  file: string[];
}
interface UpdateArgs extends DocArgs {
  name?: string;
  url?: string;
  metadata?: string;
}


const listCommand: CommandModule<GlobalArgs, DsArgs> = {
  command: 'list <ds>',
  describe: 'List the documents of a data source',
  builder: (y) =>
    withDs(y)
      .option('wide', wideOption)
      .example('$0 documents list ds_123', 'Table of id, name and url (and the service\'s STATUS when it gives one)')
      .example('$0 documents list ds_123 --json', 'Normalised records as JSON'),
  handler: async (args) => {
    const ds = requireValue(args.ds, DS);
    await withContext(args, (ctx) => listDocuments(ctx, ds));
  },
};

const getCommand: CommandModule<GlobalArgs, DocArgs> = {
  command: 'get <ds> <doc>',
  describe: 'Show one document and its metadata',
  builder: (y) => withDoc(withDs(y)).example('$0 documents get ds_123 doc_456', 'Show the document doc_456'),
  handler: async (args) => {
    const ds = requireValue(args.ds, DS);
    const doc = requireValue(args.doc, DOC);
    await withContext(args, (ctx) => getDocument(ctx, ds, doc));
  },
};

const uploadCommand: CommandModule<GlobalArgs, UploadArgs> = {
  command: 'upload <ds> <file..>',
  describe: 'Upload one or more files as new documents, in one request',
  builder: (y) =>
    withDs(y)
      .positional('file', { type: 'string', array: true, describe: 'Files to upload', demandOption: true })
      .example('$0 documents upload ds_123 handbook.pdf', 'Upload one file')
      .example('$0 documents upload ds_123 a.txt b.docx c.pdf', 'Upload three files in one request'),
  handler: async (args) => {
    const ds = requireValue(args.ds, DS);
    const paths = (args.file ?? []).map((f) => requireValue(f, 'a file name'));
    // Every file is checked before the connection is even built: nothing is sent on a typo.
    const files = await checkUploadFiles(paths);
    await withContext(args, (ctx) => uploadDocuments(ctx, ds, files));
  },
};

const updateCommand: CommandModule<GlobalArgs, UpdateArgs> = {
  command: 'update <ds> <doc>',
  describe: 'Change the name, url or metadata of a document; fields not given keep their values',
  builder: (y) =>
    withDoc(withDs(y))
      .option('name', { type: 'string', describe: 'New name', requiresArg: true })
      .option('url', { type: 'string', describe: 'New url (absolute URL)', requiresArg: true })
      .option('metadata', {
        type: 'string',
        describe: 'New metadata, a JSON object; replaces the old (dssync\'s own keys are kept)',
        requiresArg: true,
      })
      .example('$0 documents update ds_123 doc_456 --name handbook-2025.pdf', 'Rename; url and metadata stay')
      .example(`$0 documents update ds_123 doc_456 --metadata '{"team":"hr"}'`, 'Replace the metadata'),
  handler: async (args) => {
    const ds = requireValue(args.ds, DS);
    const doc = requireValue(args.doc, DOC);
    const changes: DocumentChanges = {
      name: args.name === undefined ? undefined : requireValue(args.name, '--name'),
      url: args.url === undefined ? undefined : parseUrl(requireValue(args.url, '--url')),
      metadata: args.metadata === undefined ? undefined : parseMetadata(args.metadata),
    };
    if (changes.name === undefined && changes.url === undefined && changes.metadata === undefined) {
      throw usageError('nothing to update: give --name, --url or --metadata');
    }
    await withContext(args, (ctx) => updateDocument(ctx, ds, doc, changes));
  },
};

const deleteCommand: CommandModule<GlobalArgs, DocArgs> = {
  command: 'delete <ds> <doc>',
  describe: 'Delete a document',
  builder: (y) => withDoc(withDs(y)).example('$0 documents delete ds_123 doc_456', 'Delete doc_456 from ds_123'),
  handler: async (args) => {
    const ds = requireValue(args.ds, DS);
    const doc = requireValue(args.doc, DOC);
    await withContext(args, (ctx) => deleteDocument(ctx, ds, doc));
  },
};

export const documentsCommand = commandGroup('documents', 'Administer documents: list, get, upload, update, delete', (y) =>
  y
    .command(listCommand)
    .command(getCommand)
    .command(uploadCommand)
    .command(updateCommand)
    .command(deleteCommand)
    .demandCommand(1, 'Name a documents subcommand: list, get, upload, update or delete.')
    .example('$0 documents list ds_123', 'List the documents of ds_123'),
);
