/**
 * The state as a dry run sees it: read from the state file without its lock (a running
 * daemon may hold it), changed in memory only, never written. What the engine records
 * while it plans (hashes, the mapping's entry) lives and dies with the process.
 */
import { newMappingState, withIntentDocuments } from './validate.js';
import { type FileEntry, type Intent, type MappingState, type PassRecord, type RejectedFile, type StateFile, type StateIdentity } from './schema.js';

type NewIntent = Intent extends unknown ? Omit<Intent, 'id' | 'startedAt'> : never;

/** Has the shape of the engine's StateWriter (checked where the dry run hands it over). */
export class ReadOnlyState {
  private readonly mappings = new Map<string, MappingState>();
  private n = 0;
  private ident: StateIdentity | undefined;

  /** `file`: what readStateFile returned (undefined when there is no state file yet). */
  constructor(private readonly file: StateFile | undefined) {}

  /** The mapping as the state file records it (what a sync would start from). */
  mapping(mappingId: string): MappingState | undefined {
    return this.mappings.get(mappingId) ?? this.file?.mappings[mappingId];
  }

  get identity(): StateIdentity | undefined {
    return this.ident ?? this.file?.identity;
  }
  hasRecords(): boolean {
    return this.file !== undefined && Object.keys(this.file.mappings).length > 0;
  }
  /** In memory only: a dry run plans with the identity a sync would store. */
  setIdentity(identity: StateIdentity): void {
    this.ident = identity;
  }

  ensureMapping(mappingId: string, dataSourceId: string, root: string): MappingState {
    const known = this.mappings.get(mappingId);
    if (known && known.dataSourceId === dataSourceId) return known;
    const saved = this.file?.mappings[mappingId];
    // Another data source than the state knows: the engine would start afresh, so does the plan.
    const m = saved && saved.dataSourceId === dataSourceId ? { ...structuredClone({ ...saved, files: undefined }), files: saved.files.clone() } : newMappingState(dataSourceId, root);
    this.mappings.set(mappingId, m);
    return m;
  }

  private m(mappingId: string): MappingState {
    const m = this.mappings.get(mappingId);
    if (!m) throw new Error(`dry-run state: mapping ${mappingId} was not set up`);
    return m;
  }

  setFile(mappingId: string, path: string, entry: FileEntry): void {
    this.m(mappingId).files.set(path, entry);
  }
  deleteFile(mappingId: string, path: string): void {
    this.m(mappingId).files.delete(path);
  }
  renameFile(mappingId: string, from: string, to: string, entry: FileEntry): void {
    const files = this.m(mappingId).files;
    files.delete(from);
    files.set(to, entry);
  }
  beginIntent(mappingId: string, intent: NewIntent): Promise<string> {
    const id = `dry-${++this.n}`;
    this.m(mappingId).intents[id] = { ...intent, id, startedAt: new Date().toISOString() } as Intent;
    return Promise.resolve(id);
  }
  setIntentDocuments(mappingId: string, intentId: string, documentIds: readonly (string | undefined)[]): void {
    const intents = this.m(mappingId).intents;
    const intent = intents[intentId];
    if (intent?.kind === 'upload') intents[intentId] = withIntentDocuments(intent, documentIds);
  }
  endIntent(mappingId: string, intentId: string): void {
    delete this.m(mappingId).intents[intentId];
  }
  setRejected(mappingId: string, path: string, rejected: RejectedFile): void {
    this.m(mappingId).rejected[path] = rejected;
  }
  clearRejected(mappingId: string, path: string): void {
    delete this.m(mappingId).rejected[path];
  }
  setLastPass(mappingId: string, pass: PassRecord): void {
    this.m(mappingId).lastPass = pass;
  }
  /** Nothing is ever written. */
  flush(): Promise<void> {
    return Promise.resolve();
  }
}
