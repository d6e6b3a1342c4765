/**
 * Exit codes of the public interface (DESIGN §6; the table of docs/cli.md, "Exit codes"). A
 * module of its own, importing nothing, so that main.ts (which must stay tiny) uses the same
 * names as every command.
 */
export const ExitCode = {
  /** Success. */
  OK: 0,
  /** Some work could not be done (service error, not found, file failures). */
  FAILURE: 1,
  /** Usage or configuration error. */
  USAGE: 2,
  /** The service refused the credentials (401/403). */
  AUTH: 3,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];
