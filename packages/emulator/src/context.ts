/**
 * What the routes and hooks of one emulator share, and the per-request state the hooks
 * attach (kept in a WeakMap rather than on fastify's request type, which other parts of
 * dssync also use).
 */
import type { FastifyRequest } from 'fastify';
import type PQueue from 'p-queue';
import { EmulatorError } from './errors.js';
import type { FaultInjector } from './faults.js';
import type { ResolvedOptions } from './options.js';
import type { StatsCollector } from './stats.js';
import type { MemoryStore } from './store.js';
import type { OidcIssuer } from './routes/oidc.js';

export interface EmulatorContext {
  readonly options: ResolvedOptions;
  readonly store: MemoryStore;
  readonly faults: FaultInjector;
  readonly stats: StatsCollector;
  /** Text extraction runs here, a few files at a time, to bound memory and CPU. */
  readonly extraction: PQueue;
  /** A private temporary directory for large uploads, created on first use. */
  readonly tempDir: () => Promise<string>;
  /** The token endpoint's issued tokens (checked by the authentication hook). */
  readonly oidc: OidcIssuer;
  /** Uploads received while FaultOptions.holdUploads was set: each stores its documents when called. */
  readonly held: (() => void)[];
}

export interface RequestState {
  /** An /_emulator/... route: no organization, no faults, not counted. */
  admin: boolean;
  /** The organization the request acts on, once authenticated. */
  orgId?: string;
  /** Commit, then destroy the connection instead of answering (ambiguousRate). */
  ambiguous: boolean;
}

const states = new WeakMap<FastifyRequest, RequestState>();

export function setRequestState(req: FastifyRequest, state: RequestState): void {
  states.set(req, state);
}

export function requestState(req: FastifyRequest): RequestState | undefined {
  return states.get(req);
}

/** The authenticated organization of a (non-admin) request. */
export function orgOf(req: FastifyRequest): string {
  const orgId = states.get(req)?.orgId;
  if (orgId === undefined) throw new EmulatorError(500, 'internal_error', 'request reached a route without an organization');
  return orgId;
}

/** Stores every held upload's documents, oldest first (FaultOptions.holdUploads); returns how many uploads. */
export function commitHeld(ctx: EmulatorContext): number {
  const held = ctx.held.splice(0);
  for (const commit of held) commit();
  return held.length;
}
