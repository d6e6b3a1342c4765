/** An in-memory StateWriter for the engine's unit tests. */
import type { StateWriter } from '../../src/engine/executor.js';
import type { MirrorState } from '../../src/engine/mirror.js';
import { newMappingState, withIntentDocuments } from '../../src/state/validate.js';
import type { FileEntry, Intent, MappingState, PassRecord } from '../../src/state/schema.js';

export class MemoryState implements StateWriter {
  readonly m: MappingState = newMappingState('ds1', '/srv/share');
  private n = 0;
  setFile(_id: string, path: string, entry: FileEntry): void {
    this.m.files.set(path, entry);
  }
  deleteFile(_id: string, path: string): void {
    this.m.files.delete(path);
  }
  renameFile(_id: string, from: string, to: string, entry: FileEntry): void {
    this.m.files.delete(from);
    this.m.files.set(to, entry);
  }
  async beginIntent(_id: string, intent: Omit<Intent, 'id' | 'startedAt'>): Promise<string> {
    const id = `i${++this.n}`;
    this.m.intents[id] = { ...intent, id, startedAt: 't' } as Intent;
    return id;
  }
  setIntentDocuments(_id: string, intentId: string, documentIds: readonly (string | undefined)[]): void {
    const intent = this.m.intents[intentId];
    if (intent?.kind === 'upload') this.m.intents[intentId] = withIntentDocuments(intent, documentIds);
  }
  endIntent(_id: string, intentId: string): void {
    delete this.m.intents[intentId];
  }
  setRejected(_id: string, path: string, r: MappingState['rejected'][string]): void {
    this.m.rejected[path] = r;
  }
  clearRejected(_id: string, path: string): void {
    delete this.m.rejected[path];
  }
}

/** The MemoryState a Mirror takes: one mapping, nothing recorded of passes, nothing to flush. */
export class MirrorMemoryState extends MemoryState implements MirrorState {
  ensureMapping(): MappingState {
    return this.m;
  }
  setLastPass(_id: string, _p: PassRecord): void {}
  async flush(): Promise<void> {}
}
