/**
 * The fastify application: one onRequest hook does faults then authentication, one
 * onSend hook counts answers and turns committed writes into ambiguous failures, one
 * error handler gives every error the same body, and unknown paths get 404 or 405.
 */
import { timingSafeEqual, createHash } from 'node:crypto';
import fastifyMultipart from '@fastify/multipart';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { requestState, setRequestState, type EmulatorContext, type RequestState } from './context.js';
import { EmulatorError } from './errors.js';
import { adminRoutes } from './routes/admin.js';
import { dataSourceRoutes } from './routes/datasources.js';
import { documentRoutes } from './routes/documents.js';
import { isOidcPath, registerOidcRoutes } from './routes/oidc.js';
import { methodNotAllowed, type RouteDef } from './routes/route.js';

const ADMIN_PREFIX = '/_emulator/';
const WRITE_METHODS = new Set(['POST', 'PUT', 'DELETE', 'PATCH']);

const ROUTES: RouteDef[] = [...dataSourceRoutes, ...documentRoutes, ...adminRoutes];

export async function buildServer(ctx: EmulatorContext): Promise<FastifyInstance> {
  const { logger } = ctx.options;
  const app: FastifyInstance = Fastify({
    ...(typeof logger === 'boolean' ? { logger } : { loggerInstance: logger }),
    bodyLimit: 1024 * 1024,
    // Long ids must reach checkPathId (400 naming the parameter), not the router's 414.
    routerOptions: { maxParamLength: 2048 },
    return503OnClosing: true,
  }) as unknown as FastifyInstance;
  // Size errors are reported by spool.ts, naming the file; the plugin must not raise its own.
  await app.register(fastifyMultipart, { throwFileSizeLimit: false });

  const tokenDigest = digest(ctx.options.token);
  const orgs = new Set(ctx.options.orgs);
  registerOidcRoutes(app, ctx.oidc);

  app.addHook('onRequest', async (req, reply) => {
    const path = req.url.split('?')[0] ?? '';
    const state: RequestState = { admin: path.startsWith(ADMIN_PREFIX), ambiguous: false };
    setRequestState(req, state);
    // The identity provider's routes: no bearer token, no organization.
    if (isOidcPath(path)) return undefined;
    if (!state.admin) {
      ctx.stats.request(`${req.method} ${req.routeOptions.url ?? '(unmatched)'}`);
      if (await injectFault(ctx, req, reply, state)) return reply;
    }
    authenticate(ctx, req, state, tokenDigest, orgs);
    return undefined;
  });

  app.addHook('onSend', async (req, reply, payload) => {
    const state = requestState(req);
    if (!state || state.admin) return payload;
    if (state.ambiguous && reply.statusCode < 300) {
      // The handler has committed; the client must not learn it.
      ctx.stats.ambiguous();
      req.raw.socket?.destroy();
      return payload;
    }
    ctx.stats.status(reply.statusCode);
    return payload;
  });

  app.setErrorHandler((err: FastifyError | EmulatorError, req, reply) => {
    const e = toEmulatorError(err);
    if (e.statusCode >= 500 && !(err instanceof EmulatorError)) req.log.error({ err }, 'emulator internal error');
    void reply.code(e.statusCode).headers(e.headers).send(e.toBody());
  });

  const patterns = ROUTES.map((r) => ({ method: r.method, regex: patternRegex(r.url) }));
  app.setNotFoundHandler(async (req) => {
    const path = req.url.split('?')[0] ?? '';
    const allowed = patterns.filter((p) => p.regex.test(path)).map((p) => p.method);
    if (allowed.length > 0) throw methodNotAllowed(req.method, path, [...new Set(allowed)]);
    throw new EmulatorError(404, 'not_found', `no such operation: ${req.method} ${path.slice(0, 200)}`);
  });

  for (const route of ROUTES) {
    app.route({ method: route.method, url: route.url, handler: (req, reply) => route.handler(ctx, req, reply) });
  }
  return app;
}

/** Returns true when the request was answered (or dropped) by a fault. */
async function injectFault(ctx: EmulatorContext, req: FastifyRequest, reply: FastifyReply, state: RequestState): Promise<boolean> {
  await ctx.faults.delay();
  const org = req.headers[ctx.options.orgHeader.toLowerCase()];
  const decision = ctx.faults.decide(typeof org === 'string' ? org : '', WRITE_METHODS.has(req.method));
  switch (decision.kind) {
    case 'none':
      state.ambiguous = decision.ambiguous;
      return false;
    case 'drop':
      ctx.stats.dropped();
      reply.hijack();
      req.raw.socket?.destroy();
      return true;
    case 'down':
      ctx.stats.injectedError();
      throw new EmulatorError(503, 'service_unavailable', 'the service is unavailable (emulated outage)', {}, retryAfter(ctx, decision.retryAfterSeconds));
    case 'rate-limited':
      throw new EmulatorError(
        429,
        'rate_limited',
        `too many requests: the limit is ${ctx.faults.get().rateLimitRps} per second; retry in ${decision.retryAfterSeconds} s`,
        {},
        retryAfter(ctx, decision.retryAfterSeconds),
      );
    case 'error': {
      ctx.stats.injectedError();
      const code = decision.status === 500 ? 'internal_error' : decision.status === 502 ? 'bad_gateway' : 'service_unavailable';
      throw new EmulatorError(decision.status, code, `emulated failure (HTTP ${decision.status})`);
    }
  }
}

function retryAfter(ctx: EmulatorContext, seconds: number): Record<string, string> {
  const value = ctx.faults.retryAfterHeader(seconds);
  return value === undefined ? {} : { 'retry-after': value };
}

function authenticate(ctx: EmulatorContext, req: FastifyRequest, state: RequestState, tokenDigest: Buffer, orgs: Set<string>): void {
  const header = req.headers.authorization;
  const match = typeof header === 'string' ? /^Bearer[ ]+(\S+)\s*$/i.exec(header) : null;
  if (!match) {
    throw new EmulatorError(401, 'unauthorized', 'missing or malformed Authorization header: send "Authorization: Bearer <token>"', {}, {
      'www-authenticate': 'Bearer realm="dssync-emulator"',
    });
  }
  // Compare digests in constant time; the token itself never appears in an answer or a log.
  // The static token (--token), or one the token endpoint issued and that has not expired.
  const presented = match[1] as string;
  if (!timingSafeEqual(digest(presented), tokenDigest)) {
    const issued = ctx.oidc.check(presented);
    if (issued !== 'valid') {
      throw new EmulatorError(401, 'unauthorized', issued === 'expired' ? 'the access token has expired' : 'the access token was refused', {}, {
        'www-authenticate': `Bearer realm="dssync-emulator", error="invalid_token"${issued === 'expired' ? ', error_description="The access token expired"' : ''}`,
      });
    }
  }
  if (state.admin) return;
  const headerName = ctx.options.orgHeader;
  const org = req.headers[headerName.toLowerCase()];
  if (typeof org !== 'string' || org.trim() === '') {
    throw new EmulatorError(400, 'missing_organization', `missing ${headerName} header`, { field: headerName });
  }
  if (!orgs.has(org)) {
    throw new EmulatorError(403, 'forbidden', `organization ${JSON.stringify(org.slice(0, 100))} is not accessible with this token`, {
      field: headerName,
    });
  }
  state.orgId = org;
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

function patternRegex(url: string): RegExp {
  const escaped = url
    .split('/')
    .map((seg) => (seg.startsWith(':') ? '[^/]+' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${escaped}$`);
}

/** fastify's own errors (body parsing, limits) in the emulator's error shape. */
function toEmulatorError(err: FastifyError | EmulatorError): EmulatorError {
  if (err instanceof EmulatorError) return err;
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new EmulatorError(415, 'unsupported_media_type', 'this Content-Type is not accepted here: JSON operations take application/json');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new EmulatorError(400, 'invalid_json', 'the JSON body is empty');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new EmulatorError(400, 'invalid_json', `the body is not valid JSON: ${err.message}`);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new EmulatorError(413, 'payload_too_large', 'the JSON body is larger than 1 MiB');
    default:
      break;
  }
  if (err instanceof SyntaxError || (err.statusCode === 400 && /JSON/i.test(err.message))) {
    return new EmulatorError(400, 'invalid_json', `the body is not valid JSON: ${err.message}`);
  }
  const status = err.statusCode ?? 500;
  if (status >= 400 && status < 500) return new EmulatorError(status, 'invalid_request', err.message);
  return new EmulatorError(500, 'internal_error', 'internal error of the emulator');
}
