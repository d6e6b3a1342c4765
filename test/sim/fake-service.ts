/**
 * The simulation's service: the unit tests' FakeApi plus the uploaded content's SHA-256 per
 * document (so the invariants can compare content) and faults drawn from the history.
 */
import { FakeApi, apiError } from '../helpers/fake-api.js';
import type { DocumentRecord, UploadFile } from '../../src/api/records.js';

export type Fault = 'none' | 'server-error' | 'ambiguous-upload';

export class FakeService extends FakeApi {
  /** document id -> SHA-256 of the content the service holds. */
  readonly content = new Map<string, string>();
  /** Faults still to inject, one consumed per call; empty: no fault. */
  faults: Fault[] = [];
  faultsInjected = 0;

  constructor(private readonly read: (diskPath: string) => string | undefined) {
    super();
    this.failBefore = () => {
      if (this.faults[0] !== 'server-error') return undefined;
      this.faults.shift();
      this.faultsInjected++;
      return apiError('E_SERVER', 503, { retryable: true });
    };
    this.failAfter = (op) => {
      const f = this.faults.shift();
      if (f === 'ambiguous-upload' && op === 'uploadDocuments') {
        this.faultsInjected++;
        // The upload committed; the answer was lost.
        return apiError('E_TIMEOUT', undefined, { ambiguous: true });
      }
      return undefined;
    };
  }

  override async uploadDocuments(ds: string, files: UploadFile[]): Promise<DocumentRecord[]> {
    // Read the content before the call acts: a file that vanished cannot be sent.
    const hashes = files.map((f) => this.read(f.path));
    const before = new Set(this.docs.keys());
    try {
      return await super.uploadDocuments(ds, files);
    } finally {
      const created = [...this.docs.keys()].filter((id) => !before.has(id));
      created.forEach((id, i) => this.content.set(id, hashes[i] ?? 'vanished'));
    }
  }

  override async deleteDocument(ds: string, id: string): Promise<void> {
    await super.deleteDocument(ds, id);
    this.content.delete(id);
  }
}
