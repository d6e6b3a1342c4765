/**
 * The client's and the pacer's settings as a config file without a `queue` key gives them:
 * the defaults of src/config/schema.ts (the layers below take them as required options).
 */
import { DEFAULTS } from '../../src/config/schema.js';

export const QUEUE = {
  requestsPerSecond: DEFAULTS.queue.requestsPerSecond,
  concurrency: DEFAULTS.queue.concurrency,
  maxAttempts: DEFAULTS.queue.maxAttempts,
  timeouts: DEFAULTS.queue.timeouts,
} as const;
