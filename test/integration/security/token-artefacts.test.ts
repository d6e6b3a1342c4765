/**
 * Security: the token never appears in logs, errors, state, status or metrics. A real
 * daemon at debug level mirrors a folder through injected faults, `dssync status` reads
 * what it left, `dssync sync` runs with its JSON summary, a service that echoes the
 * Authorization header in its errors is asked (also with DSSYNC_DEBUG=1, which prints
 * stacks); then every artefact is searched.
 */
import { spawn } from 'node:child_process';
import { chmod, readdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, requireBuiltBinary, runCli } from '../cli/run-cli.js';
import { createWorkspace, TOKEN, type Workspace } from '../../helpers/mirror-check.js';
import { waitFor } from '../../helpers/wait-for.js';
import { authHeader } from '../daemon/daemon-process.js';

let ws: Workspace;
const artefacts: { name: string; text: string }[] = [];

beforeAll(async () => {
  requireBuiltBinary();
  ws = await createWorkspace({
    emulator: { faults: { errorRate: 0.2, ambiguousRate: 0.2, seed: 5 } },
    config: { status: { listen: '127.0.0.1:0' }, debounceMs: 200, ingestionCheck: { enabled: true, delaySeconds: 1 }, logLevel: 'debug' },
  });
  for (let i = 0; i < 15; i++) await ws.write(`docs/f${i}.txt`, `document ${i}`);
});
afterAll(async () => {
  await ws?.close();
});

function tokenFileEnv(path: string): Record<string, string> {
  return { DSSYNC_TOKEN_FILE: path, DSSYNC_LOG_LEVEL: 'debug' };
}

describe('security: the token stays secret', () => {
  it('a daemon at debug level, through faults: logs, state, lock, status, healthz and metrics hold no token', { timeout: 60_000 }, async () => {
    const tokenFile = join(ws.dir, 'token');
    await writeFile(tokenFile, `${TOKEN}\n`);
    await chmod(tokenFile, 0o644); // world-readable: the daemon must warn, not repeat it
    const child = spawn(process.execPath, [BIN, 'run', '--config', ws.configPath], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: ws.dir, ...tokenFileEnv(tokenFile) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    try {
      const url = await until(() => /"url":"(http:\/\/127\.0\.0\.1:\d+)","msg":"status endpoint listening"/.exec(out)?.[1]);
      // Mirrored (despite the faults), ingestion checked, then every endpoint read.
      await until(async () => {
        const s = (await (await fetch(`${url}/status`, { headers: authHeader(ws) })).json()) as { mappings: { filesTracked: number; phase: string }[] };
        return s.mappings[0]?.filesTracked === 15 && s.mappings[0].phase === 'watching' ? true : undefined;
      });
      // The ingestion check (a second after the uploads) has asked the service, with the token:
      // a read of the documents (listing, one document or its chunks) logged after an upload.
      await until(() => {
        const after = out.slice(Math.max(0, out.indexOf('"msg":"uploaded"')));
        return out.includes('"msg":"uploaded"') && after.split('\n').some((l) => l.includes('"msg":"service request"') && l.includes('"method":"GET"') && /"path":"[^"]*\/documents/.test(l)) ? true : undefined;
      });
      for (const p of ['/status', '/healthz', '/metrics']) artefacts.push({ name: `endpoint ${p}`, text: await (await fetch(url + p, { headers: p === '/status' ? authHeader(ws) : {} })).text() });
      // The state is a snapshot and its journal (whichever exist): both are searched.
      for (const f of [ws.statePath, `${ws.statePath}.journal`]) {
        const text = await readFile(f, 'utf8').catch(() => undefined);
        if (text !== undefined) artefacts.push({ name: `state file ${f}`, text });
      }
      // `dssync status`, human and JSON, with the token in its environment.
      for (const json of [[], ['--json']]) {
        const st = await runCli(['status', '--config', ws.configPath, ...json], { DSSYNC_TOKEN: TOKEN, DSSYNC_LOG_LEVEL: 'debug' });
        expect(st.stdout.length, st.stderr).toBeGreaterThan(0);
        artefacts.push({ name: `dssync status ${json.join('')}`, text: st.stdout + st.stderr });
      }
      artefacts.push({ name: 'lock file', text: await readFile(`${ws.statePath}.lock`, 'utf8') });
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
    artefacts.push({ name: 'daemon stdout', text: out }, { name: 'daemon stderr', text: err });
    expect(out).toContain(`the token file ${tokenFile} is readable by every user`);
    expect(out).toMatch(/"level":20/); // debug lines were written, and searched
    for (const a of artefacts) expect(a.text, a.name).not.toContain(TOKEN);
  });

  it('dssync sync --json with debug logs: summary and logs hold no token', { timeout: 30_000 }, async () => {
    const r = await runCli(['sync', '--config', ws.configPath, '--json'], { DSSYNC_TOKEN: TOKEN, DSSYNC_LOG_LEVEL: 'debug' });
    artefacts.push({ name: 'sync stdout', text: r.stdout }, { name: 'sync stderr', text: r.stderr });
    expect(r.stdout).toContain('"mappings"');
    expect(r.stdout + r.stderr).not.toContain(TOKEN);
    for (const f of await readdir(join(ws.statePath, '..'))) {
      expect(await readFile(join(ws.statePath, '..', f), 'latin1'), f).not.toContain(TOKEN);
    }
  });

  it('a service that echoes the Authorization header in its errors: the message never repeats the token, stacks included', { timeout: 120_000 }, async () => {
    const echo = createServer((req, res) => {
      const auth = String(req.headers.authorization);
      const status = req.url?.includes('data-sources/forbidden') ? 403 : req.url?.includes('data-sources/gone') ? 404 : 401;
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `bad credentials: ${auth}` }, echo: auth }));
    });
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', () => r()));
    const base = `http://127.0.0.1:${(echo.address() as AddressInfo).port}`;
    try {
      for (const args of [['datasources', 'list'], ['datasources', 'get', 'forbidden'], ['datasources', 'get', 'gone', '--json']]) {
        for (const debug of [{}, { DSSYNC_DEBUG: '1' }] as Record<string, string>[]) {
          const r = await runCli(args, { DSSYNC_TOKEN: TOKEN, DSSYNC_BASE_URL: base, DSSYNC_ORG: 'o', DSSYNC_LOG_LEVEL: 'debug', ...debug });
          artefacts.push({ name: `${args.join(' ')} ${JSON.stringify(debug)}`, text: r.stdout + r.stderr });
          expect(r.code, r.stderr).not.toBe(0);
          expect(r.stderr).toMatch(/bad credentials: Bearer \[redacted\]|not found/);
          expect(r.stdout + r.stderr, `${args.join(' ')} ${JSON.stringify(debug)}`).not.toContain(TOKEN);
          if ('DSSYNC_DEBUG' in debug) expect(r.stderr, 'the stack was printed, and searched').toMatch(/\n\s+at /);
        }
      }
    } finally {
      echo.closeAllConnections();
      await new Promise<void>((r) => echo.close(() => r()));
    }
  });

  it('every artefact of this file was searched', () => {
    expect(artefacts.length).toBeGreaterThanOrEqual(17);
    for (const a of artefacts) expect(a.text, a.name).not.toContain(TOKEN);
  });
});

/** The value `probe` first gives (waitFor, the one way a test waits; a throw counts as not yet). */
async function until<T>(probe: () => T | undefined | Promise<T | undefined>, ms = 30_000): Promise<T> {
  let value: T | undefined;
  await waitFor(async () => (value = await probe()) !== undefined, { timeout: ms, what: 'the awaited artefact' });
  return value!;
}
