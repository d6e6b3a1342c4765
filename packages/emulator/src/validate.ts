/**
 * Strict checks of JSON request bodies. Every rejection is a 400 naming the field, and
 * unknown fields are rejected too, so a client sending a misspelt field learns about it.
 */
import type { FastifyRequest } from 'fastify';
import { EmulatorError, badRequest } from './errors.js';
import type { JsonObject } from './records.js';
import type { DocumentPatch } from './store.js';

export const MAX_METADATA_BYTES = 64 * 1024;
const MAX_NAME = 1024;
const MAX_URL = 4096;

/** The JSON object body of a request; 415 when it is not sent as application/json. */
export function jsonObjectBody(req: FastifyRequest): JsonObject {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') {
    throw new EmulatorError(
      415,
      'unsupported_media_type',
      `this operation takes a JSON body: send Content-Type: application/json (got ${type ? JSON.stringify(type) : 'no Content-Type'})`,
    );
  }
  const body = req.body;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new EmulatorError(400, 'invalid_json', 'the body must be a JSON object');
  }
  return body as JsonObject;
}

function onlyKnownFields(body: JsonObject, known: readonly string[]): void {
  for (const key of Object.keys(body)) {
    if (!known.includes(key)) {
      throw badRequest(`unknown field ${JSON.stringify(key)} (this operation accepts: ${known.join(', ')})`, { field: key });
    }
  }
}

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

function nonEmptyString(body: JsonObject, field: string, max: number): string {
  const value = body[field];
  if (typeof value !== 'string') throw badRequest(`field ${field} must be a string, got ${describe(value)}`, { field });
  if (value.trim() === '') throw badRequest(`field ${field} must not be empty`, { field });
  if (value.length > max) throw badRequest(`field ${field} is longer than ${max} characters`, { field });
  if (CONTROL.test(value)) throw badRequest(`field ${field} contains control characters`, { field });
  return value;
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing (the field is required)';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}

export function parseCreateDataSource(body: JsonObject): { name: string; llmConnectorIds: string[] } {
  onlyKnownFields(body, ['name', 'llm_connector_ids']);
  const name = nonEmptyString(body, 'name', 256);
  const ids = body.llm_connector_ids;
  if (!Array.isArray(ids)) {
    throw badRequest(`field llm_connector_ids must be an array of strings, got ${describe(ids)}`, { field: 'llm_connector_ids' });
  }
  if (ids.length === 0) throw badRequest('field llm_connector_ids must hold at least one connector id', { field: 'llm_connector_ids' });
  if (ids.length > 100) throw badRequest('field llm_connector_ids holds more than 100 ids', { field: 'llm_connector_ids' });
  ids.forEach((id, i) => {
    if (typeof id !== 'string' || id.trim() === '' || id.length > 256 || CONTROL.test(id)) {
      throw badRequest(`field llm_connector_ids[${i}] must be a non-empty string`, { field: `llm_connector_ids[${i}]` });
    }
  });
  return { name, llmConnectorIds: ids as string[] };
}

export function parseUpdateDataSource(body: JsonObject): { name: string } {
  onlyKnownFields(body, ['name']);
  return { name: nonEmptyString(body, 'name', 256) };
}

/** Absent fields are kept; at least one field is required. */
export function parseUpdateDocument(body: JsonObject): DocumentPatch {
  onlyKnownFields(body, ['name', 'url', 'metadata']);
  const patch: DocumentPatch = {};
  if (body.name !== undefined) patch.name = nonEmptyString(body, 'name', MAX_NAME);
  if (body.url !== undefined) {
    const url = nonEmptyString(body, 'url', MAX_URL);
    if (!URL.canParse(url)) throw badRequest(`field url must be an absolute URL, got ${JSON.stringify(url.slice(0, 200))}`, { field: 'url' });
    patch.url = url;
  }
  if (body.metadata !== undefined) {
    const metadata = body.metadata;
    if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata)) {
      throw badRequest(`field metadata must be a JSON object, got ${describe(metadata)}`, { field: 'metadata' });
    }
    if (Buffer.byteLength(JSON.stringify(metadata)) > MAX_METADATA_BYTES) {
      throw badRequest(`field metadata is larger than ${MAX_METADATA_BYTES} bytes of JSON`, { field: 'metadata' });
    }
    patch.metadata = metadata as JsonObject;
  }
  if (Object.keys(patch).length === 0) {
    throw badRequest('the update names no field: send at least one of name, url, metadata');
  }
  return patch;
}

export function parseAppAssignment(body: JsonObject): { orgId: string; dataSourceIds: string[] } {
  onlyKnownFields(body, ['organization_id', 'data_source_ids']);
  const orgId = nonEmptyString(body, 'organization_id', 256);
  const ids = body.data_source_ids;
  if (!Array.isArray(ids) || ids.some((id) => typeof id !== 'string')) {
    throw badRequest('field data_source_ids must be an array of strings', { field: 'data_source_ids' });
  }
  return { orgId, dataSourceIds: ids as string[] };
}
