/**
 * How a mapping watches its folder, in words (issue 12): one line per mount it spans, then
 * the folders polled because the inotify watch limit was reached, then whether events come
 * through fs.watch instead of dssync's own watch, then the inotify queue's overflows, if any. Shared by `dssync status`
 * (the daemon's figures) and `dssync config check`. PURE.
 *
 *   /srv/share is cifs (//fileserver/Public): polling every 10 s, 48,000 files, last cycle 2.1 s; events for this host's writes
 *   /srv/share/local is ext4 (/dev/sda1): events
 */
import type { WatchStatusView } from '../daemon/status/schema.js';
import { RAISE_QUEUE_LIMIT } from '../local/watch/queue-overflow.js';

/** Mount lines shown before "… and N more mounts" (a folder with many mounts below it). */
export const MOUNT_LINES = 10;

/** "48,000". */
export function formatCount(n: number): string {
  return n.toLocaleString('en-US');
}

/** "40 ms", "0.3 s", "2.1 s", "15 s", "2 min 38 s": what an operator compares with the interval. */
export function formatSeconds(ms: number): string {
  if (ms < 99.5) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 9.95) return `${s.toFixed(1)} s`;
  if (s < 99.5) return `${Math.round(s)} s`;
  const whole = Math.round(s);
  const min = Math.floor(whole / 60);
  const rest = whole % 60;
  return rest === 0 ? `${min} min` : `${min} min ${rest} s`;
}

/** "cifs (//fileserver/Public)": the type, and the source when it says more. */
function describeFs(m: { fsType: string; source: string }): string {
  return `${m.fsType}${m.source && m.source !== m.fsType ? ` (${m.source})` : ''}`;
}

type Poll = NonNullable<WatchStatusView['poll']>;

/**
 * "every 10 s": the interval achieved (the target until two cycles have run, said so), with
 * the target when the walk stretches it at its CPU budget (a large tree, a loaded machine).
 */
function pollEvery(poll: Poll | undefined): string {
  const target = poll?.targetIntervalMs;
  const achieved = poll?.achievedIntervalMs;
  if (achieved === undefined) return target !== undefined ? `every ${formatSeconds(target)} (target)` : '';
  if (target === undefined || achieved <= target * 1.5) return `every ${formatSeconds(achieved)}`;
  const budget = poll?.budgetPercent !== undefined ? `; the walk takes longer at ${poll.budgetPercent} % of a core` : '';
  return `every ${formatSeconds(achieved)} (target ${formatSeconds(target)}${budget})`;
}

/** "polling every 10 s, 48,000 files, last cycle 2.1 s". */
function describePolling(poll: Poll | undefined, files: number | undefined, cycleMs: number | undefined): string {
  const every = `polling${pollEvery(poll) ? ` ${pollEvery(poll)}` : ''}`;
  if (files === undefined || cycleMs === undefined) return `${every}, first cycle not finished yet`;
  return `${every}, ${formatCount(files)} file${files === 1 ? '' : 's'}, last cycle ${formatSeconds(cycleMs)}`;
}

/**
 * The lines for one mapping: `root` is the mapped folder as configured. `mode` is the
 * mapping's watch.mode (events for this host's writes are kept on polled mounts unless it
 * is "poll").
 */
export function formatWatchLines(w: WatchStatusView, root: string, mode?: string): string[] {
  const lines: string[] = [];
  const polledEvents = (mode ?? w.mode) === 'poll' ? 'no events (watch.mode "poll")' : "events for this host's writes";
  for (const m of w.mounts.slice(0, MOUNT_LINES)) {
    const where = m.rel === '' ? root : `${root.replace(/\/+$/, '')}/${m.rel}`;
    if (m.kind === 'events') lines.push(`${where} is ${describeFs(m)}: events`);
    else lines.push(`${where} is ${describeFs(m)}: ${describePolling(w.poll, m.files, m.lastCycleMs)}; ${polledEvents}`);
  }
  if (w.mounts.length > MOUNT_LINES) lines.push(`… and ${w.mounts.length - MOUNT_LINES} more mounts`);
  if (w.overLimit.length > 0) {
    const n = w.overLimit.length;
    const figures = w.overLimit.map((sub) => w.poll?.bySubtree?.[sub]).filter((f) => f !== undefined);
    const files = figures.length > 0 ? `; ${formatCount(figures.reduce((a, f) => a + f.files, 0))} files` : '';
    const names = w.overLimit.slice(0, 3).map((sub) => (sub === '' ? root : sub));
    const more = n > 3 ? `, … ${n - 3} more` : '';
    const every = pollEvery(w.poll);
    const fix = w.limitFix ?? 'sysctl fs.inotify.max_user_watches=524288';
    lines.push(`${formatCount(n)} folder${n === 1 ? '' : 's'} past the inotify watch limit, polled${every ? ` ${every}` : ''} instead (${names.join(', ')}${more}${files}); raise the limit: ${fix}`);
  }
  if (w.backend?.name === 'fs.watch') {
    lines.push(`events through Node's fs.watch, not dssync's inotify watch (${w.backend.why ?? 'not loaded'}): about 1.3 KB more memory a folder, and a queue overflow is only inferred`);
  }
  const q = w.queue;
  if (q && q.overflows > 0) {
    const last = q.lastOverflowAt ? `, last at ${q.lastOverflowAt.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')}${q.lastBurst !== undefined ? ` (${formatCount(q.lastBurst)} events at once)` : ''}` : '';
    lines.push(
      `the inotify queue (${formatCount(q.queueSize)} events) ${q.reported ? 'overflowed' : 'may have overflowed'} ${q.overflows === 1 ? 'once' : `${formatCount(q.overflows)} times`}${last}: everything was looked at again; if it repeats, raise it: ${RAISE_QUEUE_LIMIT}`,
    );
  }
  return lines;
}
