/**
 * How many documents a mirror's listing of its data source may hold (issue 36.3): a hostile
 * or broken service answering page after page (each under the 64 MiB answer cap, up to the
 * client's 10,000 pages) would otherwise hold the daemon's memory until it is killed. The
 * data source holds what the mapping put there plus what others did: a multiple of the
 * files tracked, plus a floor for the documents of others and a mapping's first pass.
 */
export const LISTING_FLOOR = 100_000;
export const LISTING_PER_FILE = 4;

export function listingBound(filesTracked: number): { maxRecords: number; boundReason: string } {
  return {
    maxRecords: LISTING_PER_FILE * filesTracked + LISTING_FLOOR,
    boundReason: `${LISTING_PER_FILE} × the ${filesTracked} files tracked + ${LISTING_FLOOR}`,
  };
}
