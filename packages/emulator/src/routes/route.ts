/** The shape of one emulator route, so the server can register them and answer 405s. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { EmulatorContext } from '../context.js';
import { EmulatorError, notFound } from '../errors.js';
import { checkPathId } from '../ids.js';
import type { DataSourceEntry, DocumentEntry } from '../records.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

export interface RouteDef {
  method: Method;
  url: string;
  handler: (ctx: EmulatorContext, req: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
}

/** A path parameter, checked (400 invalid_id naming it when malformed). */
export function pathParam(req: FastifyRequest, name: string): string {
  const params = req.params as Record<string, string | undefined>;
  return checkPathId(name, params[name]);
}

export function requireDataSource(ctx: EmulatorContext, orgId: string, id: string): DataSourceEntry {
  const ds = ctx.store.findDataSource(orgId, id);
  if (!ds) throw notFound(`data source ${id} not found`);
  return ds;
}

export function requireDocument(ctx: EmulatorContext, ds: DataSourceEntry, id: string): DocumentEntry {
  const doc = ctx.store.findDocument(ds, id);
  if (!doc) throw notFound(`document ${id} not found in data source ${ds.id}`);
  return doc;
}

export function methodNotAllowed(method: string, path: string, allowed: string[]): EmulatorError {
  return new EmulatorError(405, 'method_not_allowed', `${method} is not allowed on ${path} (allowed: ${allowed.join(', ')})`, {}, {
    allow: allowed.join(', '),
  });
}
