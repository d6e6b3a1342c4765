/**
 * What the daemon does next about each problem it shows: the words of the status (`degradedNext`),
 * the page and its recent errors, in one place, each matching what the code does — the
 * schedule's back-off (schedule.ts), the mass-delete guard's wait (no request until a
 * decision), a mapping stopped by its configuration (no retry until a reload).
 */
import { DEFAULT_RETRY_BASE_MS, MAX_RETRY_DELAY_MS } from './schedule.js';

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

/** A failed pass: the schedule's back-off (retryDelayMs). */
export function retriedWithBackoff(baseMs: number = DEFAULT_RETRY_BASE_MS): string {
  return `retried with back-off (${seconds(baseMs)}, doubling up to ${MAX_RETRY_DELAY_MS / 60_000} min)`;
}

/** A file whose operation failed: the next pass takes it again, after the same back-off. */
export function fileRetried(baseMs: number = DEFAULT_RETRY_BASE_MS): string {
  return `retried at the next pass (back-off: ${seconds(baseMs)}, doubling up to ${MAX_RETRY_DELAY_MS / 60_000} min)`;
}

/** The mass-delete guard stopped the pass (pass-loop.ts, awaitDecision): nothing is retried. */
export function awaitingDecision(mapping: string): string {
  return `waiting for you: no request goes out until you confirm (dssync confirm-delete --mapping ${mapping}, or "Confirm" on this page) or the folder changes; no retry meanwhile`;
}

/** A pass stopped by a guard that is not the operator's decision (an outage of the ignore file...). */
export const GUARD_STOPPED = 'nothing is deleted until the cause is fixed; the pass is retried with back-off';

/** A mapping stopped by its configuration (a data source by id gone): no retry until a reload. */
export const CONFIG_STOPPED = 'not retried: fix the config, then reload (SIGHUP)';

/** The watch could not be set up: set up again with back-off, then a full pass finds what changed meanwhile. */
export const WATCH_RETRIED = 'watched again with back-off; a full pass then finds what changed meanwhile';

/** A problem of the running watch (a queue overflow, a mount that polls late...): a full pass settles what it missed. */
export const WATCH_PROBLEM = 'watching goes on; a full pass (rescan) settles what the watch missed';

/** A file the service refused. */
export const FILE_REFUSED = 'refused by the service: not retried until the file changes (or "retry skipped and failed files")';

/** A write whose answer was lost. */
export const ANSWER_LOST = 'the next full pass lists the data source and settles it';
