/** Documents of a data source (list, view, update, delete) and their chunks. */
import { storedName } from '../filename.js';
import { orgOf } from '../context.js';
import { notFound } from '../errors.js';
import { encodeCursor, listBodyBytes, parseListQuery } from '../paging.js';
import { chunkRecord, documentRecord } from '../records.js';
import { jsonObjectBody, parseUpdateDocument } from '../validate.js';
import { pathParam, requireDataSource, requireDocument, type RouteDef } from './route.js';
import { uploadDocuments } from './upload.js';

const DOCS = '/datastore/v1/data-sources/:data_source_id/documents';

export const documentRoutes: RouteDef[] = [
  {
    method: 'GET',
    url: DOCS,
    handler: async (ctx, req, reply) => {
      const ds = requireDataSource(ctx, orgOf(req), pathParam(req, 'data_source_id'));
      const q = parseListQuery(req.query, ctx.options.pageSize);
      void reply.type('application/json; charset=utf-8');
      return listBodyBytes(ctx.store.pageDocuments(ds, q.afterSeq, q.limit), (doc) => JSON.stringify(documentRecord(doc)));
    },
  },
  { method: 'POST', url: `${DOCS}/upload`, handler: uploadDocuments },
  {
    method: 'GET',
    url: `${DOCS}/:document_id`,
    handler: async (ctx, req) => {
      const ds = requireDataSource(ctx, orgOf(req), pathParam(req, 'data_source_id'));
      return documentRecord(requireDocument(ctx, ds, pathParam(req, 'document_id')));
    },
  },
  {
    method: 'PUT',
    url: `${DOCS}/:document_id`,
    handler: async (ctx, req) => {
      const ds = requireDataSource(ctx, orgOf(req), pathParam(req, 'data_source_id'));
      const doc = requireDocument(ctx, ds, pathParam(req, 'document_id'));
      const patch = parseUpdateDocument(jsonObjectBody(req));
      // A service that ignores the new name (FaultOptions.ignoreRename): the rest applies.
      if (ctx.faults.get().ignoreRename) delete patch.name;
      // A service that ignores the new url (FaultOptions.ignoreUrl).
      if (ctx.faults.get().ignoreUrl) delete patch.url;
      // A service that rewrites or cuts every name it stores (FaultOptions.nameRules, nameMaxBytes).
      if (patch.name !== undefined) patch.name = storedName(patch.name, ctx.faults.get());
      if (Object.keys(patch).length > 0) ctx.store.updateDocument(doc, patch);
      return documentRecord(doc);
    },
  },
  {
    method: 'DELETE',
    url: `${DOCS}/:document_id`,
    handler: async (ctx, req, reply) => {
      const ds = requireDataSource(ctx, orgOf(req), pathParam(req, 'data_source_id'));
      ctx.store.deleteDocument(ds, requireDocument(ctx, ds, pathParam(req, 'document_id')));
      reply.code(204);
      return reply.send();
    },
  },
  {
    method: 'GET',
    url: `${DOCS}/:document_id/chunks`,
    handler: async (ctx, req) => {
      const ds = requireDataSource(ctx, orgOf(req), pathParam(req, 'data_source_id'));
      const doc = requireDocument(ctx, ds, pathParam(req, 'document_id'));
      const q = parseListQuery(req.query, ctx.options.pageSize);
      const page = ctx.store.pageChunks(doc, q.afterSeq, q.limit);
      return {
        items: page.indexes.map((i) => chunkRecord(doc, i)),
        next_cursor: page.nextAfter === null ? null : encodeCursor(page.nextAfter),
      };
    },
  },
  {
    method: 'GET',
    url: '/datastore/v1/documents/:document_id/chunks/:chunk_id',
    handler: async (ctx, req) => {
      const documentId = pathParam(req, 'document_id');
      const chunkId = pathParam(req, 'chunk_id');
      const doc = ctx.store.findDocumentById(orgOf(req), documentId);
      if (!doc) throw notFound(`document ${documentId} not found`);
      const index = ctx.store.findChunk(doc, chunkId);
      if (index === undefined) throw notFound(`chunk ${chunkId} not found in document ${documentId}`);
      return chunkRecord(doc, index);
    },
  },
];

