/**
 * A preload for the dssync processes of a bench run (docs/performance.md, "Session 21"):
 *
 *   BENCH_SAMPLES=/tmp/s BENCH_NODE_ARGS="--import $PWD/bench/sampler.mjs" BENCH_ONLY=scaleDaemon … node dist/bench/run.js
 *
 * Once a second, the main thread of each dssync process appends one line to
 * `$BENCH_SAMPLES-<pid>.txt`: seconds since its start, RSS, the heap's committed and used
 * size, the old space's, the array buffers', and the event loop's delay over that second
 * (mean, p99 and max, at a 1 ms resolution). Nothing is written without BENCH_SAMPLES.
 */
import { appendFileSync } from 'node:fs';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { setInterval } from 'node:timers';
import { getHeapSpaceStatistics } from 'node:v8';
import { isMainThread } from 'node:worker_threads';

const prefix = process.env.BENCH_SAMPLES;
if (isMainThread && prefix) {
  const out = `${prefix}-${process.pid}.txt`;
  const started = performance.now();
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const mb = (n) => Math.round(n / 2 ** 20);
  const ms = (ns) => (ns / 1e6).toFixed(1);
  appendFileSync(out, `# ${process.argv.slice(2).join(' ')}\n# s rssMB heapMB heapUsedMB oldMB oldUsedMB arrayBuffersMB loopMeanMs loopP99Ms loopMaxMs\n`);
  setInterval(() => {
    const m = process.memoryUsage();
    const old = getHeapSpaceStatistics().find((s) => s.space_name === 'old_space');
    const line = [((performance.now() - started) / 1000).toFixed(1), mb(m.rss), mb(m.heapTotal), mb(m.heapUsed), mb(old?.space_size ?? 0), mb(old?.space_used_size ?? 0), mb(m.arrayBuffers), ms(delay.mean), ms(delay.percentile(99)), ms(delay.max)];
    appendFileSync(out, `${line.join(' ')}\n`);
    delay.reset();
  }, 1000).unref();
}
