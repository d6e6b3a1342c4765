/**
 * The idle daemon's requests an hour (issue 39.7: requests per mapping per hour at rest), from
 * what the service received over a window and when the lease's renewals landed.
 */
import { median } from './util.js';

/** The median gap between successive times (ms); undefined with fewer than two. */
export function renewalInterval(times: number[]): number | undefined {
  const gaps = times.slice(1).map((t, i) => t - times[i]!);
  return gaps.length === 0 ? undefined : median(gaps);
}

/**
 * Requests an hour at rest: the lease's renewals at their measured interval (a window holds
 * one more or one fewer of them depending on where it falls: a 60 s window, 3 or 4 renewals
 * 15.03 s apart), the others at the rate the window saw.
 */
export function restPerHour(requests: number, leaseWrites: number, seconds: number, renewalMs: number | undefined): number {
  const others = ((requests - leaseWrites) * 3600) / seconds;
  const lease = renewalMs === undefined ? (leaseWrites * 3600) / seconds : 3_600_000 / renewalMs;
  return Math.round(others + lease);
}
