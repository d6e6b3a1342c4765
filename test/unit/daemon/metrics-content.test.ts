import { describe, expect, it } from 'vitest';
import { DaemonMetrics } from '../../../src/daemon/status/metrics.js';
import { addContentBytesRead, contentBytesRead } from '../../../src/local/hash.js';

describe('DaemonMetrics: content read', () => {
  it('exports the bytes of file content read so far, as a counter (a restart over an unchanged tree must show 0 growth)', async () => {
    const metrics = new DaemonMetrics(() => []);
    const value = async (): Promise<number> => Number(/^dssync_content_bytes_read_total (\d+)$/m.exec(await metrics.text())?.[1]);
    const before = await value();
    expect(before).toBe(contentBytesRead());
    addContentBytesRead(4096);
    expect(await value()).toBe(before + 4096);
    expect(await metrics.text()).toMatch(/^# TYPE dssync_content_bytes_read_total counter$/m);
  });
});
