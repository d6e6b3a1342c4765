/**
 * pollLatency (issue 12): `dssync run` with default settings on a FUSE mount (bindfs over a
 * backing folder). Files are changed in the BACKING folder, as a file server would: no
 * inotify event reaches the mount, only the poller can see them. Each sample is the time
 * from the write to the moment the service applies the new version's metadata; samples are
 * spaced at random so that they fall anywhere in the poll cycle. Also reported: the
 * daemon's CPU while polling (percent of one core), the poll cycle and interval achieved,
 * then the same latency for files written THROUGH the mount by this host (seen by events).
 * Skipped (and the report says why) where bindfs or /dev/fuse is missing.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BenchContext } from '../lib/context.js';
import { startDaemon, writeConfig } from '../lib/dssync.js';
import { onDocumentUpdate, startService } from '../lib/service.js';
import { log, quantile, round, seeded, waitFor } from '../lib/util.js';
import { createHash } from 'node:crypto';

/** Files and samples per mode (the figure is at 10,000 files). */
const SIZES = { full: { files: 10_000, samples: 20 }, quick: { files: 2_000, samples: 8 }, smoke: { files: 200, samples: 3 } } as const;

/** Writes through the mount (seen by events), after the server-side samples. */
const THROUGH_SAMPLES = 10;

export type PollLatencyFigures = Record<string, number | string>;

export async function runPollLatency(ctx: BenchContext): Promise<PollLatencyFigures> {
  try {
    execFileSync('bindfs', ['--version'], { stdio: 'ignore' });
  } catch {
    return { skipped: 'bindfs is not installed' };
  }
  const { files, samples } = SIZES[ctx.mode];
  const dir = join(ctx.tmp, 'poll');
  const back = join(dir, 'back');
  const mnt = join(dir, 'mnt');
  await mkdir(back, { recursive: true });
  await mkdir(mnt, { recursive: true });
  const rels: string[] = [];
  for (let d = 0; d * 100 < files; d++) {
    await mkdir(join(back, `d${d}`), { recursive: true });
    const n = Math.min(100, files - d * 100);
    await Promise.all(
      Array.from({ length: n }, (_, k) => {
        rels.push(`d${d}/f${k}.txt`);
        return writeFile(join(back, `d${d}`, `f${k}.txt`), `file ${d}/${k}\n`);
      }),
    );
  }
  try {
    execFileSync('bindfs', [back, mnt], { stdio: 'pipe' });
  } catch (e) {
    return { skipped: `bindfs could not mount (no FUSE here?): ${(e as Error).message.split('\n')[0]}` };
  }
  const emu = await startService();
  const daemon = await startDaemon(await writeConfig({ dir, baseUrl: emu.url, share: mnt }));
  const waiting = new Map<string, { sha: string; done: (at: number) => void }>();
  const undo = onDocumentUpdate(emu, (path, sha) => {
    const w = waiting.get(path);
    if (w && w.sha === sha) w.done(performance.now());
  });
  try {
    log(`pollLatency: ${files} files on bindfs, waiting for the first full pass and a poll cycle`);
    await waitFor(
      'the first full pass and a poll cycle',
      async () => {
        const m = (await daemon.status()).mappings[0] as { lastPass?: { kind: string }; watch?: { poll?: { cycles: number } } } | undefined;
        return m?.lastPass?.kind === 'full' && (m.watch?.poll?.cycles ?? 0) >= 1 ? true : undefined;
      },
      600_000,
      200,
    );
    const random = seeded(12);
    const latencies: number[] = [];
    const cpu0 = daemon.cpuSeconds() ?? 0;
    const t0 = performance.now();
    for (let i = 0; i < samples; i++) {
      await sleep(Math.floor(random() * 5000));
      const rel = rels[Math.floor(random() * rels.length)]!;
      const content = `changed on the server side, sample ${i}\n`;
      const sha = createHash('sha256').update(content).digest('hex');
      const seen = new Promise<number>((resolve) => waiting.set(rel, { sha, done: resolve }));
      const start = performance.now();
      await writeFile(join(back, rel), content);
      const end = await Promise.race([seen, sleep(120_000).then(() => NaN)]);
      waiting.delete(rel);
      latencies.push(end - start);
      log(`pollLatency: sample ${i + 1}/${samples}: ${Math.round(end - start)} ms`);
    }
    const cpuPercent = (((daemon.cpuSeconds() ?? 0) - cpu0) / ((performance.now() - t0) / 1000)) * 100;
    // Writes made through the mount by this host: inotify sees them (as on a local disk).
    const through: number[] = [];
    for (let i = 0; i < THROUGH_SAMPLES; i++) {
      await sleep(1000 + Math.floor(random() * 1000));
      const rel = rels[Math.floor(random() * rels.length)]!;
      const content = `written through the mount by this host, sample ${i}\n`;
      const sha = createHash('sha256').update(content).digest('hex');
      const seen = new Promise<number>((resolve) => waiting.set(rel, { sha, done: resolve }));
      const start = performance.now();
      await writeFile(join(mnt, rel), content);
      const end = await Promise.race([seen, sleep(60_000).then(() => NaN)]);
      waiting.delete(rel);
      through.push(end - start);
      log(`pollLatency: through the mount ${i + 1}/${THROUGH_SAMPLES}: ${Math.round(end - start)} ms`);
    }
    const throughOk = through.filter((l) => Number.isFinite(l));
    const m = (await daemon.status()).mappings[0] as { watch?: { mounts: { fsType: string; kind: string }[]; poll?: { lastCycleMs?: number; achievedIntervalMs?: number; lastFiles: number } } };
    const ok = latencies.filter((l) => Number.isFinite(l));
    return {
      files,
      samples,
      missed: samples - ok.length,
      mount: `${m.watch?.mounts[0]?.fsType ?? '?'} (${m.watch?.mounts[0]?.kind ?? '?'})`,
      p50Ms: round(quantile(ok, 0.5), 0),
      p95Ms: round(quantile(ok, 0.95), 0),
      maxMs: round(Math.max(...ok), 0),
      daemonCpuPercent: round(cpuPercent, 1),
      lastCycleMs: m.watch?.poll?.lastCycleMs ?? NaN,
      achievedIntervalMs: m.watch?.poll?.achievedIntervalMs ?? NaN,
      filesPolled: m.watch?.poll?.lastFiles ?? NaN,
      throughMountSamples: THROUGH_SAMPLES,
      throughMountMissed: THROUGH_SAMPLES - throughOk.length,
      throughMountP50Ms: round(quantile(throughOk, 0.5), 0),
      throughMountMaxMs: round(Math.max(...throughOk), 0),
    };
  } finally {
    undo();
    await daemon.stop();
    await emu.close();
    execFileSync('fusermount', ['-uz', mnt]);
  }
}
