/**
 * POST .../documents/upload: multipart/form-data, one part named `documents` per file.
 *
 * Each part is streamed (spool.ts) with its size counted as it arrives. The request is
 * all-or-nothing: a rejected part (wrong name, type, size, too many files, malformed
 * body) fails the whole request and stores nothing. Once every part has arrived, text is
 * extracted, then all documents are stored at once and answered 201 in part order.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { extractChunks, type Extraction } from '../chunker.js';
import { orgOf, requestState, type EmulatorContext } from '../context.js';
import { EmulatorError, badRequest } from '../errors.js';
import { detectFileType, refusedTypeReason, type FileType } from '../file-types.js';
import { documentNameFromPart, rewriteName, storedName } from '../filename.js';
import { documentRecord } from '../records.js';
import { spoolPart, type SpooledFile } from '../spool.js';
import { pathParam, requireDataSource } from './route.js';

interface ReceivedFile {
  name: string;
  type: FileType;
  spooled: SpooledFile;
}

export async function uploadDocuments(ctx: EmulatorContext, req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
  const orgId = orgOf(req);
  const ds = requireDataSource(ctx, orgId, pathParam(req, 'data_source_id'));
  if (!req.isMultipart()) {
    const type = req.headers['content-type'];
    throw new EmulatorError(
      415,
      'unsupported_media_type',
      `upload takes multipart/form-data with one part named "documents" per file (got ${type ? JSON.stringify(type) : 'no Content-Type'})`,
    );
  }
  const files = await receiveFiles(ctx, req);
  let extractions: Extraction[];
  try {
    extractions = await Promise.all(
      files.map((f) => ctx.extraction.add(async () => extractChunks(f.type.kind, await f.spooled.read()))),
    );
  } finally {
    await disposeAll(files);
  }
  const store = (): ReturnType<EmulatorContext['store']['addDocuments']> | undefined => {
    // The data source may have been deleted while the body was arriving (or the upload held).
    const current = ctx.store.findDataSource(orgId, ds.id);
    if (!current) return undefined;
    return ctx.store.addDocuments(current, received(files, extractions));
  };
  if (ctx.faults.get().holdUploads) {
    // A commit after the client gave up: the answer is a destroyed connection (the onSend
    // hook), the documents are stored when the test commits the held uploads.
    ctx.held.push(() => {
      const docs = store();
      if (docs) ctx.stats.upload(docs.length);
    });
    const state = requestState(req);
    if (state) state.ambiguous = true;
    reply.code(201);
    return { documents: [] };
  }
  requireDataSource(ctx, orgId, ds.id);
  const docs = store()!;
  ctx.stats.upload(docs.length);
  reply.code(201);
  return { documents: docs.map(documentRecord) };
}

function received(files: readonly ReceivedFile[], extractions: readonly Extraction[]) {
  return files.map((f, i) => {
    const extraction = extractions[i] as Extraction;
    return {
      name: f.name,
      contentType: f.type.contentType,
      size: f.spooled.size,
      status: extraction.status,
      failureReason: extraction.failureReason,
      chunkTexts: extraction.chunks,
    };
  });
}

async function receiveFiles(ctx: EmulatorContext, req: FastifyRequest): Promise<ReceivedFile[]> {
  const { maxFileBytes, maxFilesPerUpload } = ctx.options;
  const files: ReceivedFile[] = [];
  try {
    const parts = req.parts({
      preservePath: true, // keep "folder/file.txt" whole: dssync names documents by relative path
      limits: { fileSize: maxFileBytes, files: maxFilesPerUpload, fields: 10, parts: maxFilesPerUpload + 10, headerPairs: 100 },
    });
    for await (const part of parts) {
      if (part.type !== 'file') {
        throw part.fieldname === 'documents'
          ? badRequest('a documents part has no filename: send each file with filename="..."', { field: 'documents' })
          : badRequest(`unexpected form field ${JSON.stringify(part.fieldname)}: send files as parts named "documents"`, {
              field: part.fieldname,
            });
      }
      if (part.fieldname !== 'documents') {
        throw badRequest(`unexpected part ${JSON.stringify(part.fieldname ?? '')}: send files as parts named "documents"`, {
          field: part.fieldname ?? '',
        });
      }
      const name = rewriteName(documentNameFromPart(part.filename), ctx.faults.get().rewriteNames);
      const { permissiveFormats } = ctx.options;
      const type = detectFileType(name, part.mimetype, permissiveFormats);
      if (!type) {
        throw new EmulatorError(415, 'unsupported_media_type', refusedTypeReason(name, part.mimetype, permissiveFormats), {
          field: 'documents',
          file: name,
        });
      }
      const spooled = await spoolPart(part.file, { name, maxBytes: maxFileBytes, tempDir: ctx.tempDir });
      files.push({ name: storedName(name, ctx.faults.get()), type, spooled });
    }
  } catch (err) {
    await disposeAll(files);
    throw translateMultipartError(err, maxFilesPerUpload);
  }
  if (files.length === 0) {
    throw badRequest('the upload holds no file: send at least one part named "documents"', { field: 'documents' });
  }
  return files;
}

async function disposeAll(files: ReceivedFile[]): Promise<void> {
  await Promise.all(files.map((f) => f.spooled.dispose().catch(() => {})));
}

/** @fastify/multipart and busboy errors, as the emulator's own. */
function translateMultipartError(err: unknown, maxFiles: number): unknown {
  if (err instanceof EmulatorError) return err;
  const e = err as { code?: string; message?: string; statusCode?: number };
  switch (e.code) {
    case 'FST_FILES_LIMIT':
    case 'FST_PARTS_LIMIT':
      return new EmulatorError(413, 'payload_too_large', `more than ${maxFiles} files in one upload`, { field: 'documents' });
    case 'FST_FIELDS_LIMIT':
      return badRequest('too many form fields: send only parts named "documents"');
    case 'FST_PROTO_VIOLATION':
      return badRequest('a part name is not allowed');
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
      return new EmulatorError(415, 'unsupported_media_type', 'upload takes multipart/form-data');
    default:
      return new EmulatorError(400, 'malformed_multipart', `the multipart body could not be read: ${e.message ?? String(err)}`);
  }
}
