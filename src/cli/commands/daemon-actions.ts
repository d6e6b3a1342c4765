/**
 * Commands that act on the running daemon through its status endpoint, with the daemon's
 * status token (docs/status.md, "Pausing a mapping" and "Confirming a mass delete"):
 *
 *   dssync pause --mapping ID          no request for that mapping until resumed (kept across restarts)
 *   dssync resume --mapping ID         a full pass sends what changed meanwhile
 *   dssync confirm-delete --mapping ID the deletions the mass-delete guard stopped, as shown, may go ahead
 *
 * They need the daemon: its runners hold the decision, and its lock keeps anyone else from
 * the state. With no daemon, they say so (for a mass delete: `dssync sync --allow-mass-delete`).
 * An action is a POST with the CSRF token of GET /session, as the page's are, through the
 * daemon's socket (daemon-link.ts: the token only over TCP, to the daemon's user).
 */
import type { Argv, CommandModule } from 'yargs';
import { settingsFromArgs } from '../context.js';
import type { Settings } from '../../config/types.js';
import { parseDaemonStatus, type DaemonStatus } from '../../daemon/status/schema.js';
import { CliError, usageError } from '../exit.js';
import { hideOptions, type GlobalArgs } from '../options.js';
import { formatJson } from '../output.js';
import { callDaemon, configMismatch, DAEMON_TIMEOUT_MS, daemonTarget, noDaemon, readDaemonToken, statusUrl, type DaemonTarget } from '../daemon-link.js';
import { printable } from '../../printable.js';

interface ActionArgs extends GlobalArgs {
  mapping: string;
}

/** A daemon of this config that answered, and how to ask it again. */
export interface DaemonHandle {
  url: string;
  target: DaemonTarget;
  status: DaemonStatus;
}

interface Answer {
  status: number;
  body: unknown;
}

async function call(target: DaemonTarget, path: string, init: { method: 'GET' | 'POST'; headers?: Record<string, string>; body?: unknown }): Promise<Answer> {
  const payload = init.body === undefined ? undefined : JSON.stringify(init.body);
  const headers: Record<string, string> = { ...init.headers, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) };
  const a = await callDaemon(target, { method: init.method, path, headers, body: payload, timeoutMs: DAEMON_TIMEOUT_MS * 2 }, 64 * 1024 * 1024);
  let body: unknown;
  try {
    body = JSON.parse(a.body.toString('utf8'));
  } catch {
    body = undefined;
  }
  return { status: a.status, body };
}

/**
 * The running daemon of this config, or a CliError saying why there is none to ask and
 * what to do instead (`without`).
 */
export async function connectDaemon(settings: Settings, without: string): Promise<DaemonHandle> {
  const listen = settings.status.listen;
  if (listen === false) throw new CliError(`the status endpoint is off (status.listen is false): this command talks to the running daemon through it. ${without}`);
  const read = readDaemonToken(settings);
  const target = daemonTarget(settings, listen, read.token);
  const url = statusUrl(listen);
  let answer: Answer;
  try {
    answer = await call(target, '/status', { method: 'GET' });
  } catch (e) {
    if (noDaemon(e)?.kind === 'not-dssync') throw new CliError(`no dssync daemon: ${(e as Error).message}. ${without}`);
    throw new CliError(`the daemon is not running (no answer at ${target.socketPath} nor at ${url}: ${(e as Error).message}): this command needs the running daemon. ${without}`);
  }
  if (answer.status === 401 || answer.status === 403) {
    throw new CliError(read.token === undefined ? `cannot ask the daemon: ${read.reason}. ${without}` : `the daemon at ${url} did not accept this config's status token (another config's daemon?). ${without}`);
  }
  const parsed = answer.status === 200 ? parseDaemonStatus(answer.body) : undefined;
  if (!parsed?.ok) throw new CliError(`something other than this config's dssync daemon answers at ${url} (HTTP ${answer.status}). ${without}`);
  const other = configMismatch(settings, parsed.status);
  if (other !== undefined) throw new CliError(`no daemon for this config at ${url}: ${other}. ${without}`);
  return { url, target, status: parsed.status };
}

/** POSTs an action as the page does: the CSRF token the daemon hands out (and the token over TCP). */
export async function postAction(d: DaemonHandle, action: string, body: Record<string, unknown>): Promise<{ status: number; body: Record<string, unknown> }> {
  const session = await call(d.target, '/session', { method: 'GET' });
  const csrf = (session.body as { csrf?: unknown } | undefined)?.csrf;
  if (typeof csrf !== 'string') throw new CliError(`the daemon at ${d.url} gave no CSRF token (HTTP ${session.status})`);
  const r = await call(d.target, `/actions/${action}`, { method: 'POST', headers: { 'x-dssync-csrf': csrf }, body });
  return { status: r.status, body: (r.body ?? {}) as Record<string, unknown> };
}

/** The mapping of the daemon's status, or a usage error naming the ones there are. */
export function mappingOf(status: DaemonStatus, id: string): DaemonStatus['mappings'][number] {
  const m = status.mappings.find((x) => x.id === id);
  if (!m) throw usageError(`--mapping: no mapping "${id}" (the daemon runs: ${status.mappings.map((x) => x.id).join(', ') || 'none'})`);
  return m;
}

const out = (t: string): void => void process.stdout.write(t);

function builder(y: Argv<GlobalArgs>, example: string): Argv<ActionArgs> {
  return hideOptions(y, ['base-url', 'org', 'token-file'])
    .option('mapping', { type: 'string', demandOption: true, describe: 'the mapping id (dssync status lists them)' })
    .example(example, '') as unknown as Argv<ActionArgs>;
}

function pauseOrResume(kind: 'pause' | 'resume'): CommandModule<GlobalArgs, ActionArgs> {
  return {
    command: kind,
    describe:
      kind === 'pause'
        ? 'Pause a mapping on the running daemon: no request for it (no pass, no ingestion check) until resumed; kept across restarts'
        : 'Resume a paused mapping on the running daemon: a full pass sends what changed meanwhile',
    builder: (y) => builder(y, `$0 ${kind} --config /etc/dssync/config.json --mapping docs`),
    handler: async (args) => {
      const d = await connectDaemon(settingsFromArgs(args), `Start the daemon (dssync run, or systemctl start dssync), then ${kind} again.`);
      mappingOf(d.status, args.mapping);
      const r = await postAction(d, kind, { mapping: args.mapping });
      if (r.status !== 200) throw new CliError(`the daemon refused to ${kind} mapping ${args.mapping}: HTTP ${r.status}: ${String(r.body.error ?? '')}`);
      out(args.json ? formatJson(r.body) : `mapping ${printable(args.mapping)}: ${String(r.body.note ?? kind)}\n`);
    },
  };
}

export const pauseCommand = pauseOrResume('pause');
export const resumeCommand = pauseOrResume('resume');

export const confirmDeleteCommand: CommandModule<GlobalArgs, ActionArgs> = {
  command: 'confirm-delete',
  describe: 'Confirm the deletions the mass-delete guard stopped on the running daemon (those shown by dssync status --pending-deletes, and no more)',
  builder: (y) => builder(y, '$0 confirm-delete --config /etc/dssync/config.json --mapping docs'),
  handler: async (args) => {
    const d = await connectDaemon(settingsFromArgs(args), 'Without a daemon, run dssync sync --allow-mass-delete.');
    const pending = mappingOf(d.status, args.mapping).pendingDeletes;
    if (!pending) throw new CliError(`mapping ${args.mapping} has no deletions waiting for a decision (dssync status shows when one waits)`);
    // The set shown here, named by its digest: if the folder changed since, the daemon refuses.
    const r = await postAction(d, 'confirm-delete', { mapping: args.mapping, digest: pending.digest });
    if (r.status === 409) throw new CliError(`not confirmed: ${String(r.body.error ?? 'the deletions waiting changed')}; dssync status --mapping ${args.mapping} --pending-deletes shows them`);
    if (r.status !== 202) throw new CliError(`the daemon refused the confirmation: HTTP ${r.status}: ${String(r.body.error ?? '')}`);
    out(
      args.json
        ? formatJson(r.body)
        : `mapping ${printable(args.mapping)}: ${pending.total} deletion(s) confirmed; the next pass (now) deletes them, and asks again if it would delete more.\n`,
    );
  },
};
