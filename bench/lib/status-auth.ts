/**
 * The header a benchmark or the chaos suite sends to a daemon's /status: the daemon needs
 * its token on loopback too (issue 24.1). The token is status.tokenFile's, or the one the
 * daemon writes beside its state at start (`<statePath>.status-token`).
 */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

export function statusAuthHeader(configPath: string): Record<string, string> {
  const config = JSON.parse(readFileSync(configPath, 'utf8')) as { statePath?: string; status?: { tokenFile?: string } };
  const at = (p: string): string => resolve(dirname(configPath), p);
  const file = config.status?.tokenFile ? at(config.status.tokenFile) : config.statePath ? `${at(config.statePath)}.status-token` : undefined;
  if (!file) throw new Error(`${configPath} names no statePath: cannot find the daemon's status token`);
  return { authorization: `Bearer ${readFileSync(file, 'utf8').trim()}` };
}
