/** The API layer's public surface, for the engine, the CLI and the daemon. */
export type { DatastoreApi, RequestOptions } from './api.js';
export { ApiError, isApiError, classifyStatus, type ApiErrorCode } from './errors.js';
export type { ChunkRecord, DataSourceRecord, DocumentRecord, DocumentUpdate, JsonObject, UploadFile } from './records.js';
export { DatastoreClient, createClientFromConnection, type DatastoreClientOptions, type ClientFromConnectionOptions } from './client.js';
export { Pacer, type PacerOptions, type PacerEvent, type PacerStats, type RunOptions } from './pacer.js';
export { realClock, type Clock } from './clock.js';
export { backoffDelay, backoffCeiling, parseRetryAfter, MAX_RETRY_AFTER_MS } from './backoff.js';
export { decideRetry, toAmbiguous } from './retry-policy.js';
export { createAgent, type TimeoutOptions } from './http.js';
export { contentTypeFor } from './content-type.js';
export { DEFAULT_USER_AGENT, DSSYNC_VERSION } from './version.js';
