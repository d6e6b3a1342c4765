/** Data sources: create, retrieve, list, update, delete; and the data sources of an App. */
import { orgOf } from '../context.js';
import { parseListQuery, toListBody } from '../paging.js';
import { dataSourceRecord } from '../records.js';
import { jsonObjectBody, parseCreateDataSource, parseUpdateDataSource } from '../validate.js';
import { pathParam, requireDataSource, type RouteDef } from './route.js';

const BASE = '/datastore/v1/data-sources';

export const dataSourceRoutes: RouteDef[] = [
  {
    method: 'POST',
    url: BASE,
    handler: async (ctx, req, reply) => {
      const { name, llmConnectorIds } = parseCreateDataSource(jsonObjectBody(req));
      const ds = ctx.store.createDataSource(orgOf(req), name, llmConnectorIds);
      reply.code(201).header('location', `${BASE}/${ds.id}`);
      return dataSourceRecord(ds);
    },
  },
  {
    method: 'GET',
    url: BASE,
    handler: async (ctx, req) => {
      const q = parseListQuery(req.query, ctx.options.pageSize);
      return toListBody(ctx.store.pageDataSources(orgOf(req), q.afterSeq, q.limit), dataSourceRecord);
    },
  },
  {
    method: 'GET',
    url: `${BASE}/:data_source_id`,
    handler: async (ctx, req) => dataSourceRecord(requireDataSource(ctx, orgOf(req), pathParam(req, 'data_source_id'))),
  },
  {
    method: 'PUT',
    url: `${BASE}/:data_source_id`,
    handler: async (ctx, req) => {
      const ds = requireDataSource(ctx, orgOf(req), pathParam(req, 'data_source_id'));
      const { name } = parseUpdateDataSource(jsonObjectBody(req));
      ctx.store.renameDataSource(ds, name);
      return dataSourceRecord(ds);
    },
  },
  {
    method: 'DELETE',
    url: `${BASE}/:data_source_id`,
    handler: async (ctx, req, reply) => {
      const ds = requireDataSource(ctx, orgOf(req), pathParam(req, 'data_source_id'));
      ctx.store.deleteDataSource(ds);
      reply.code(204);
      return reply.send();
    },
  },
  {
    method: 'GET',
    url: '/semantics/apps/:llm_app_id/data-sources',
    handler: async (ctx, req) => {
      const appId = pathParam(req, 'llm_app_id');
      const q = parseListQuery(req.query, ctx.options.pageSize);
      return toListBody(ctx.store.pageAppDataSources(orgOf(req), appId, q.afterSeq, q.limit), dataSourceRecord);
    },
  },
];
