/**
 * What shows that a measured restart was one (issue 39): the daemon took its mapping's
 * lease from the marker whose id an earlier run kept beside the state (one read, no search),
 * as every restart after a first mirror does. A mapping's *first* start under the lease
 * lists the whole data source to find a marker, makes one when there is none, lists again
 * and waits the settle time: measured as a restart, it is not the figure the issue asks for.
 */

/** What the service and the daemon's status saw from the daemon's start to the end of its first pass. */
export interface LeaseStartSeen {
  /** Listings of the data source's documents begun (lib/service.ts countListings). */
  listingsBegun: number;
  /** Lease marker documents made (lib/service.ts countLeaseWrites). */
  markersMade: number;
  /** The marker the daemon's lease names (its status), undefined when it names none. */
  markerUsed: string | undefined;
}

/** How many listings a restart over an unchanged tree begins: its first pass's own. */
export const RESTART_LISTINGS = 1;

/** Why this was not a restart from a remembered marker; empty when it was one. */
export function notARestart(seen: LeaseStartSeen): string[] {
  const why: string[] = [];
  if (seen.markersMade > 0) why.push(`the daemon made ${seen.markersMade} lease marker document(s): the data source held none`);
  if (seen.listingsBegun > RESTART_LISTINGS) {
    why.push(`it began ${seen.listingsBegun} listings of the data source by the end of its first pass, where a restart begins ${RESTART_LISTINGS} (its pass's): the lease's marker was searched for, not read from the id kept beside the state`);
  }
  if (seen.markerUsed === undefined) why.push('its status names no lease marker: it does not hold the lease');
  return why;
}
