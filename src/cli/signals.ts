/**
 * The one place where dssync handles SIGTERM, SIGINT and SIGHUP. The entry file (main.ts)
 * installs the handlers before any other module loads, so that a signal arriving while
 * the rest loads — systemd's reload (SIGHUP) in the first moments of `run` — is kept and
 * acted on once a command claims signals, instead of killing the process.
 *
 * Imports nothing but Node's own modules: it must load with a handful of file descriptors.
 */
export type Signal = 'SIGTERM' | 'SIGINT' | 'SIGHUP';
export type SignalHandler = (signal: Signal) => void;

const SIGNALS: readonly Signal[] = ['SIGTERM', 'SIGINT', 'SIGHUP'];
const NUMBERS: Record<Signal, number> = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 };

let claimed: SignalHandler | undefined;
let holdUntilClaimed = false;
const held: Signal[] = [];
let installed = false;

function dispatch(signal: Signal): void {
  if (claimed) return claimed(signal);
  if (holdUntilClaimed) {
    held.push(signal);
    return;
  }
  // No command listens: what the signal would have done without a handler.
  process.exit(128 + NUMBERS[signal]);
}

/**
 * Installs the handlers. With `hold`, signals that arrive before a command claims them
 * are kept (the daemon: a reload or a stop asked for while it starts); without, they end
 * the process as they would by default until a command claims them.
 */
export function installSignalHandlers(options: { hold: boolean }): void {
  holdUntilClaimed = options.hold;
  if (installed) return;
  installed = true;
  for (const s of SIGNALS) process.on(s, dispatch);
}

/**
 * A command takes the signals: `handler` is called for each, starting with those held
 * since the start. Returns the function that gives them back (default behaviour again).
 */
export function claimSignals(handler: SignalHandler): () => void {
  installSignalHandlers({ hold: holdUntilClaimed });
  claimed = handler;
  for (const s of held.splice(0)) handler(s);
  return () => {
    if (claimed === handler) claimed = undefined;
  };
}

/** Resolves at the first SIGTERM or SIGINT (a SIGHUP is ignored): for the foreground servers. */
export function untilStopSignal(): Promise<Signal> {
  return new Promise((resolve) => {
    const release = claimSignals((s) => {
      if (s === 'SIGHUP') return;
      release();
      resolve(s);
    });
  });
}
