/**
 * One finding of a check (`dssync config check`, and the layers that own each check:
 * local/ for folders and inotify, state/ for the state file, daemon/ for the status port).
 * A line for the operator: what was found, and what to do about it.
 */
export type CheckLevel = 'ok' | 'warn' | 'fail';

export interface CheckResult {
  /** Which check: config, folder, service, data-source, app, inotify, status-listen, state. */
  check: string;
  level: CheckLevel;
  message: string;
  /** What to do about it (commands, file lines), when there is something to do. */
  fix?: string | undefined;
  mapping?: string | undefined;
}
