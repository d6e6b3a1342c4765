/**
 * /_emulator/...: control of a running emulator for tests and benchmarks in another
 * process. Bearer token required, no organization header, never faulted, not counted.
 */
import { EmulatorError, badRequest, notFound } from '../errors.js';
import { commitHeld } from '../context.js';
import { checkFaultOptions } from '../options.js';
import { jsonObjectBody, parseAppAssignment } from '../validate.js';
import { pathParam, type RouteDef } from './route.js';

export const adminRoutes: RouteDef[] = [
  {
    method: 'GET',
    url: '/_emulator/stats',
    // oidc: token requests by grant and refusals (the API counters leave the token endpoint out).
    handler: async (ctx) => ({ ...ctx.stats.snapshot(), store: ctx.store.counts(), oidc: { ...ctx.oidc.counts } }),
  },
  {
    method: 'POST',
    url: '/_emulator/reset-stats',
    handler: async (ctx, _req, reply) => {
      ctx.stats.reset();
      reply.code(204);
      return reply.send();
    },
  },
  {
    method: 'POST',
    url: '/_emulator/commit-held',
    handler: async (ctx) => ({ committed: commitHeld(ctx) }),
  },
  {
    method: 'GET',
    url: '/_emulator/faults',
    handler: async (ctx) => ctx.faults.get(),
  },
  {
    method: 'PUT',
    url: '/_emulator/faults',
    handler: async (ctx, req) => {
      const body = jsonObjectBody(req);
      try {
        ctx.faults.set(checkFaultOptions(body));
      } catch (err) {
        if (err instanceof RangeError) {
          const field = /^faults\.(\w+)/.exec(err.message)?.[1];
          throw badRequest(err.message, field ? { field } : {});
        }
        throw err;
      }
      return ctx.faults.get();
    },
  },
  {
    method: 'PUT',
    url: '/_emulator/apps/:llm_app_id',
    handler: async (ctx, req) => {
      const appId = pathParam(req, 'llm_app_id');
      const { orgId, dataSourceIds } = parseAppAssignment(jsonObjectBody(req));
      if (!ctx.options.orgs.includes(orgId)) {
        throw new EmulatorError(400, 'invalid_request', `organization ${JSON.stringify(orgId)} is not served by this emulator`, {
          field: 'organization_id',
        });
      }
      for (const id of dataSourceIds) {
        if (!ctx.store.findDataSource(orgId, id)) throw notFound(`data source ${id} not found in organization ${orgId}`);
      }
      ctx.store.setAppDataSources(orgId, appId, dataSourceIds);
      return { llm_app_id: appId, organization_id: orgId, data_source_ids: dataSourceIds };
    },
  },
];
