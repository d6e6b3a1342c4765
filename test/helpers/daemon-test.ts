/**
 * The setup the daemon's integration tests share (test/integration/daemon): each test gets
 * a workspace (the emulator, a folder, a config) with its files written, and a `dssync run`
 * over it, returned once the startup pass converged and the daemon went idle; both are
 * closed after the test, whatever happened. Call `daemonTests()` once at a file's top.
 *
 *   const daemons = daemonTests();
 *   it('…', async () => {
 *     const { w, d } = await daemons.start({ files: { 'a.txt': 'alpha' } });
 *   });
 */
import { afterEach, beforeAll } from 'vitest';
import { requireBuiltBinary } from '../integration/cli/run-cli.js';
import { daemonWorkspace, startDaemon, waitConverged, waitIdle, type DaemonProcess, type SpawnOptions } from '../integration/daemon/daemon-process.js';
import type { Workspace, WorkspaceOptions } from './mirror-check.js';

export interface DaemonTestOptions extends WorkspaceOptions {
  /** Files written (relative path -> content) before the daemon starts. */
  files?: Record<string, string>;
  /** Extra environment of the daemon (e.g. DSSYNC_RETRY_DELAY_MS). */
  env?: SpawnOptions['env'];
  /**
   * How the startup pass is known to be done: by default the data source converges to the
   * folder; a test whose folder holds excluded files passes its own condition. Then the
   * daemon must go idle.
   */
  startupDone?: ((w: Workspace) => Promise<void>) | undefined;
}

export function daemonTests(): { start(o?: DaemonTestOptions): Promise<{ w: Workspace; d: DaemonProcess }> } {
  let ws: Workspace | undefined;
  let daemon: DaemonProcess | undefined;
  beforeAll(() => requireBuiltBinary());
  afterEach(async () => {
    await daemon?.kill();
    daemon = undefined;
    await ws?.close();
    ws = undefined;
  });
  return {
    async start(o = {}) {
      const w = (ws = await daemonWorkspace(o));
      for (const [path, content] of Object.entries(o.files ?? {})) await w.write(path, content);
      const d = (daemon = await startDaemon(w, { env: o.env }));
      await (o.startupDone ?? ((x) => waitConverged(x, 'the startup full pass')))(w);
      await waitIdle(d);
      return { w, d };
    },
  };
}
