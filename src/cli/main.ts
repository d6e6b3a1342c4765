#!/usr/bin/env node
/**
 * The `dssync` entry file. Deliberately tiny: before loading the rest (app.ts and its
 * hundreds of modules), it installs the signal handlers — a SIGHUP in the first moments of
 * `dssync run` must not kill the daemon — and checks the open-file limit, under which the
 * loading itself fails (EMFILE) and the operator must be told which limit and what to set;
 * `dssync run` and `sync` started without glibc's malloc settings start again with them
 * at once (malloc-env.ts); it holds the heap's growth, once the heap is large, to what a daemon of a million files needs
 * (heap-growth.ts); and it turns on Node's compile cache, which must be on before the rest is compiled
 * (compile-cache.ts).
 */
import { FDS_TO_LOAD, FDS_WARN_DAEMON, fdLimitAdvice, isFdExhaustion, openFileLimit } from './fd-limit.js';
import { limitHeapGrowth } from './heap-growth.js';
import { disposition } from '../errors/disposition.js';
import { installSignalHandlers } from './signals.js';
import { startCompileCache } from './compile-cache.js';
import { tooOldNode } from './runtime-check.js';
import { execWithMallocEnv } from './malloc-env.js';

const tooOld = tooOldNode(process.versions.node);
if (tooOld !== undefined) {
  process.stderr.write(`${tooOld}\n`);
  process.exit(2);
}
const args = process.argv.slice(2);
const command = args.find((a) => !a.startsWith('-'));
// Before anything else: it may replace this process (nothing done before it would count).
execWithMallocEnv(command);
limitHeapGrowth();
startCompileCache();

// The daemon keeps what arrives while it starts; other commands end as by default until
// they take the signals themselves.
installSignalHandlers({ hold: command === 'run' });

const limit = openFileLimit();
// The daemon would starve later (each upload, watched folder and connection holds one):
// say which limit at once. A limit too low to load anything is told below, once.
if (command === 'run' && limit !== undefined && limit >= FDS_TO_LOAD && limit < FDS_WARN_DAEMON) {
  process.stderr.write(`dssync: warning: ${fdLimitAdvice(limit)}\n`);
}
import('./app.js').then(
  (app) => app.start(args),
  (err: unknown) => {
    const fds = isFdExhaustion(err);
    process.stderr.write(`dssync: ${fds ? `cannot start: ${fdLimitAdvice(limit)}` : `cannot load: ${err instanceof Error ? err.message : String(err)}`}\n`);
    process.exitCode = disposition(err).exitCode;
  },
);
