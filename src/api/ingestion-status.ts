/**
 * The service's own word on a document's ingestion, when its record carries one (the
 * emulator: `status: "ready" | "failed"` and `failure_reason`). Read from the raw record,
 * so that a service that says nothing leaves it undefined rather than "ok".
 */
import type { DocumentRecord } from './records.js';

export interface IngestionStatus {
  /** As the service spells it ("ready", "failed", "processing"...). */
  status: string;
  /** Why it failed, when the service says. */
  reason?: string | undefined;
  /** The service says ingestion failed: the document holds no usable text. */
  failed: boolean;
}

const FAILED = new Set(['failed', 'failure', 'error', 'errored', 'rejected']);

export function ingestionStatus(record: Pick<DocumentRecord, 'raw'>): IngestionStatus | undefined {
  const raw = record.raw;
  const status = [raw.status, raw.ingestion_status, raw.ingestionStatus].find((v): v is string => typeof v === 'string' && v !== '');
  if (status === undefined) return undefined;
  const reason = [raw.failure_reason, raw.failureReason, raw.status_reason, raw.statusReason].find((v): v is string => typeof v === 'string' && v !== '');
  return { status, reason, failed: FAILED.has(status.toLowerCase()) };
}
