/**
 * Only the lease's holder writes (docs/reliability.md, "The lease"): the client a mapping's
 * mirror is given refuses every write while this process does not hold the lease, checked
 * as each request is made. Reads go through.
 */
import type { DatastoreApi } from '../../api/api.js';

/** A write refused because this process does not hold the mapping's lease. */
export class LeaseNotHeldError extends Error {
  override readonly name = 'LeaseNotHeldError';
  readonly code = 'E_LEASE_NOT_HELD';
}

const WRITES = new Set<string>(['uploadDocuments', 'updateDocument', 'deleteDocument', 'createDataSource', 'updateDataSource', 'deleteDataSource']);

/** `api`, whose writes reject with LeaseNotHeldError unless `holds()` says yes at the call. */
export function leaseGated(api: DatastoreApi, holds: () => boolean, mappingId: string): DatastoreApi {
  return new Proxy(api, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      const fn = (value as (...a: unknown[]) => unknown).bind(target);
      if (typeof key !== 'string' || !WRITES.has(key)) return fn;
      return (...args: unknown[]) => (holds() ? fn(...args) : Promise.reject(new LeaseNotHeldError(`mapping ${mappingId}: this process does not hold the lease; nothing is written`)));
    },
  });
}
