/**
 * Bad-input catalogue, the operator's view, continued (issue 14 items 1, 4-10, 13, 14): the
 * built `dssync` binary against the emulator on loopback, where the address, the token, the
 * network, the status port or the folder is wrong, and on a terminal. Each case asserts the
 * exit code and the words that matter (the setting's name, the fix) and that nothing of the
 * mirrored baseline is lost. docs/reliability.md ("Operator messages (issue 14)") holds the table.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, requireBuiltBinary, runCli, type CliResult } from '../integration/cli/run-cli.js';
import { startDaemon, waitFor } from '../integration/daemon/daemon-process.js';
import { createWorld, removeQuietly, TOKEN, variantConfig, type World } from './world.js';
import { AS_NOBODY, nobodyBinary, type NobodyBinary } from '../helpers/as-nobody.js';

let world: World;
beforeAll(async () => {
  requireBuiltBinary();
  world = await createWorld();
});
afterAll(async () => {
  if (nobodyTarget && 'dispose' in nobodyTarget) nobodyTarget.dispose();
  await world?.close();
});

const ENV = { DSSYNC_TOKEN: TOKEN, DSSYNC_LOG_LEVEL: 'warn' };
function dssync(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return runCli(args, { ...ENV, ...env });
}
function service(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return runCli(args, { DSSYNC_TOKEN: TOKEN, DSSYNC_BASE_URL: world.ws.emu.url, DSSYNC_ORG: 'org-test', ...env });
}

/**
 * A config of its own for a daemon case: its own state file and data source (a state file
 * is an installation: pointed at the world's data source it would take those documents for
 * another owner's and upload its own beside them).
 */
function ownDaemonConfig(name: string, edit: (c: Record<string, unknown>) => void = () => undefined): Promise<string> {
  return variantConfig(world, name, (c) => {
    c.statePath = join(world.ws.dir, name, 'state.json');
    (c.mappings as Record<string, unknown>[])[0]!.dataSource = { name, llmConnectorIds: ['conn-1'] };
    edit(c);
  });
}

/** A loopback port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** `script` (util-linux) gives the command a pseudo-terminal: what an operator at a shell sees. */
function hasScript(): boolean {
  return spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;
}

/** Runs the binary on a pseudo-terminal until it exits; the terminal's output, colours removed. */
function onTerminal(args: string[], env: Record<string, string>, until?: (out: string) => boolean): Promise<{ code: number | null; out: string }> {
  const command = ['exec', JSON.stringify(process.execPath), JSON.stringify(BIN), ...args.map((a) => JSON.stringify(a))].join(' ');
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qfec', command, '/dev/null'], {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', SHELL: '/bin/sh', TERM: 'xterm', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let stopping = false;
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      if (until && !stopping && until(plain(out))) {
        stopping = true;
        // Ctrl-C on the terminal: the daemon stops as an operator would stop it.
        child.stdin.write('\x03');
      }
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out: plain(out) }));
  });
}

function plain(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '').replace(/\r/g, '');
}

describe('bad-input catalogue: operator messages (issue 14)', () => {
  it('U01 status --config B while a daemon for config A holds the status port: B answers for itself, not with A\'s mappings', { timeout: 120_000 }, async () => {
    const a = await ownDaemonConfig('u01-a', (c) => {
      c.status = { listen: '127.0.0.1:0' };
    });
    const daemon = await startDaemon(world.ws, { configPath: a });
    try {
      const listen = new URL(daemon.url).host;
      const b = await ownDaemonConfig('u01-b', (c) => {
        c.status = { listen };
      });
      const r = await dssync(['status', '--config', b]);
      // B has no token of A's daemon (issue 24.1: the token is needed on loopback), so A's
      // daemon tells B nothing, and B says why.
      expect(r.stdout).toContain(`the daemon at ${daemon.url} did not answer: no daemon for this config has started`);
      expect(r.stdout).toMatch(/no state yet: dssync has not synced with this config/);
      expect(r.stdout).not.toMatch(/mapping name:u01-a/);
      const json = JSON.parse((await dssync(['status', '--config', b, '--json'])).stdout) as { source: string };
      expect(json.source).toBe('state-file');
    } finally {
      await daemon.stop();
    }
    await world.expectNothingLost();
  });

  it('U04 status text: the counts include adopted (as the JSON does), and a failed pass is never shown beside "last full ok" at the same time', { timeout: 120_000 }, async () => {
    // The state file lost with its identity file: a new state draws a new id and holds the
    // uploads (issue 23); `dssync adopt` names the documents, and the pass records them (no
    // upload). (A touched file with the same content is only re-hashed: "unchanged".)
    for (const f of ['', '.journal', '.identity.json']) await rm(`${world.ws.statePath}${f}`, { force: true });
    const held = await dssync(['sync', '--config', world.ws.configPath]);
    expect(held.code).toBe(1);
    expect(held.stdout).toMatch(/0 uploaded/);
    const adopt = await dssync(['adopt', '--config', world.ws.configPath, '--mapping', 'name:Share']);
    expect(adopt.code, adopt.stdout + adopt.stderr).toBe(0);
    const s = await dssync(['sync', '--config', world.ws.configPath]);
    expect(s.code, s.stdout + s.stderr).toBe(0);
    expect(s.stdout).toMatch(/: 0 uploaded, .* 8 adopted/);
    const st = await dssync(['status', '--config', world.ws.configPath]);
    expect(st.code, st.stdout).toBe(0);
    expect(st.stdout).toMatch(/last pass: +ok, .*: 8 adopted/);
    const json = JSON.parse((await dssync(['status', '--config', world.ws.configPath, '--json'])).stdout) as { mappings: { lastPass: { summary: { adopted: number } } }[] };
    expect(json.mappings[0]!.lastPass.summary.adopted).toBe(8);

    // A daemon whose pass is not ok (a path the service refuses): one verdict, not two.
    const longDir = Array.from({ length: 9 }, () => 'd'.repeat(120)).join('/');
    await world.ws.write(`${longDir}/long.txt`, 'x');
    // A fixed port: `status` finds the daemon by the config's address.
    const port = await closedPort();
    const d = await ownDaemonConfig('u04-daemon', (c) => {
      c.status = { listen: `127.0.0.1:${port}` };
    });
    const daemon = await startDaemon(world.ws, { configPath: d });
    try {
      await waitFor(() => daemon.logs().some((l) => l.msg === 'full pass done'), { timeout: 60_000, what: 'a full pass' });
      const r = await dssync(['status', '--config', d]);
      const lastPass = /last pass: +full, (ok|NOT OK), (\S+)/.exec(r.stdout);
      expect(lastPass, r.stdout).not.toBeNull();
      const fullOk = /last full ok: +(\S+)/.exec(r.stdout);
      if (fullOk) expect(fullOk[1]).not.toBe(lastPass![2]);
      if (lastPass![1] === 'NOT OK') expect(r.code).toBe(1);
    } finally {
      await daemon.stop();
      await removeQuietly(join(world.ws.share, 'd'.repeat(120)));
    }
    await world.expectNothingLost();
  });

  it('U05 a second daemon on a taken status port: config check tries the port and names status.listen and the fix; the daemon says so and keeps syncing', { timeout: 120_000 }, async () => {
    const a = await ownDaemonConfig('u05-a', (c) => {
      c.status = { listen: '127.0.0.1:0' };
    });
    const first = await startDaemon(world.ws, { configPath: a });
    try {
      const listen = new URL(first.url).host;
      const b = await ownDaemonConfig('u05-b', (c) => {
        c.status = { listen };
      });
      const check = await dssync(['config', 'check', '--config', b]);
      expect(check.code, check.stdout).toBe(1);
      expect(check.stdout).toMatch(new RegExp(`✗ status\\.listen ${listen.replace(/\./g, '\\.')} is already in use .*; set another port in "status": \\{ "listen": "127\\.0\\.0\\.1:\\d+" \\}, or "listen": false`));
      const second = await startDaemon(world.ws, { configPath: b, waitReady: false });
      try {
        await waitFor(() => second.logs().some((l) => l.msg === 'full pass done'), { timeout: 60_000, what: "the second daemon's pass" });
        const line = second.logs().find((l) => l.code === 'EADDRINUSE');
        expect(line?.msg).toMatch(/^status\.listen [\d.:]+ is in use by another program .*Fix: free the port or set another "status": \{ "listen": \.\.\. \}/);
        expect(second.child.exitCode).toBeNull();
      } finally {
        await second.stop();
      }
    } finally {
      await first.stop();
    }
    await world.expectNothingLost();
  });

  it('U06 a baseUrl with a wrong path: the address is named wrong with the fix, not "data source does not exist"', { timeout: 120_000 }, async () => {
    const wrong = `${world.ws.emu.url}/datastore/v1`;
    const fix = `set baseUrl to "${world.ws.emu.url}": dssync adds /datastore/v1/... itself`;
    const s = await dssync(['sync', '--config', world.ws.configPath, '--base-url', wrong]);
    expect(s.code, s.stdout + s.stderr).toBe(2);
    // The route named is the first request of the pass: the list, or (a mapping by name whose
    // state records its data source, issue 23 defect 8) that data source by id.
    expect(s.stdout).toMatch(new RegExp(`baseUrl "${esc(wrong)}" looks wrong: the service has no route GET /datastore/v1/datastore/v1/data-sources(/ds_[0-9a-f]+)? \\(404 Not Found\\); ${esc(fix)}`));
    expect(s.stdout).not.toMatch(/no longer exists|does not exist/);
    // A 404 for one record (its data source) is told apart from a missing route by asking for the list.
    const get = await service(['datasources', 'get', world.dataSourceId], { DSSYNC_BASE_URL: wrong });
    expect(get.code).toBe(2);
    expect(get.stderr).toContain(fix);
    expect(get.stderr).not.toMatch(/not found/);
    const missing = await service(['datasources', 'get', 'ds_nope']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^dssync: no data source has the id or the name "ds_nope" \(`dssync datasources list` shows each one's id and name\)$/m);
    // Nothing is deleted "successfully" at a wrong address: a 404 there is not "already gone".
    const del = await service(['documents', 'delete', world.dataSourceId, 'doc_x'], { DSSYNC_BASE_URL: `${world.ws.emu.url}/api` });
    expect(del.code).toBe(2);
    expect(del.stderr).toMatch(/baseUrl ".*\/api" looks wrong: .*check the path "\/api" of baseUrl/);
    const check = await dssync(['config', 'check', '--config', world.ws.configPath, '--base-url', wrong]);
    expect(check.code).toBe(1);
    expect(check.stdout).toContain(fix);
    await world.expectNothingLost();
  });

  it('U07 https:// to a plain-HTTP port: the server does not speak TLS, use http://; no OpenSSL internals', { timeout: 120_000 }, async () => {
    const https = world.ws.emu.url.replace(/^http:/, 'https:');
    const r = await service(['datasources', 'list'], { DSSYNC_BASE_URL: https });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`the server at ${https} does not speak TLS`);
    expect(r.stderr).toContain(`check baseUrl: if the service is served without TLS there, use ${world.ws.emu.url}`);
    expect(r.stderr).not.toMatch(/ssl3|openssl|0A00010B|certificate/i);
    const check = await dssync(['config', 'check', '--config', world.ws.configPath, '--base-url', https]);
    expect(check.code).toBe(1);
    expect(check.stdout).toContain('does not speak TLS');
    expect(check.stdout).not.toMatch(/openssl/i);
  });

  it('U08 an unreadable mapped folder: config check names the folder and the fix (no ignore file blamed); sync creates no data source', { timeout: 120_000 }, async (ctx) => {
    // Root reads everything: the binary then runs as nobody (setpriv, util-linux).
    const root = process.getuid?.() === 0;
    const target = root ? nobody() : undefined;
    if (target && 'skip' in target) ctx.skip(target.skip);
    const dir = join(world.ws.dir, 'u08');
    await mkdir(join(dir, 'locked'), { recursive: true });
    await mkdir(join(dir, 'state'), { recursive: true });
    await writeFile(join(dir, 'locked', 'a.txt'), 'a');
    await chmod(dir, 0o755);
    await chmod(world.ws.dir, 0o755);
    // Writable by nobody too, and sticky: a state folder others may write to is refused unless sticky (issue 36.4).
    await chmod(join(dir, 'state'), 0o1777);
    await chmod(join(dir, 'locked'), root ? 0o700 : 0o000);
    const cfg = join(dir, 'config.json');
    await writeFile(
      cfg,
      JSON.stringify({ baseUrl: world.ws.emu.url, organizationId: 'org-test', statePath: join(dir, 'state', 'state.json'), status: { listen: false }, mappings: [{ path: join(dir, 'locked'), dataSource: { name: 'U08 new', llmConnectorIds: ['conn-1'] } }] }),
    );
    await chmod(cfg, 0o644);
    const run = (args: string[]): Promise<CliResult> => (root ? asNobody(args) : dssync(args));
    try {
      const check = await run(['config', 'check', '--config', cfg]);
      expect(check.code, check.stdout + check.stderr).toBe(1);
      expect(check.stdout).toContain(`the folder ${join(dir, 'locked')} cannot be read by this user`);
      expect(check.stdout).toMatch(/give the user dssync runs as read access to it/);
      expect(check.stdout).not.toMatch(/dssyncignore|ignore file/);
      const s = await run(['sync', '--config', cfg]);
      expect(s.code, s.stdout + s.stderr).toBe(2);
      expect(s.stdout).toMatch(/mappings\[0\]\.path: the folder .* cannot be read by this user .*\(no data source was created\)/);
      expect(world.ws.emu.store.listDataSources('org-test').map((d) => d.name)).not.toContain('U08 new');
    } finally {
      await chmod(join(dir, 'locked'), 0o700);
      await chmod(world.ws.dir, 0o700);
    }
    await world.expectNothingLost();
  });

  it('U09 a missing or unreadable token file: the fix, no raw ENOENT/EACCES; config check marks it and goes on; a 401 names where the token came from', { timeout: 120_000 }, async (ctx) => {
    const target = process.getuid?.() === 0 ? nobody() : undefined;
    if (target && 'skip' in target) ctx.skip(target.skip);
    const missing = await variantConfig(world, 'u09-missing', (c) => {
      c.tokenFile = 'no-such-token';
    });
    const noToken = { DSSYNC_LOG_LEVEL: 'warn' };
    const s = await runCli(['sync', '--config', missing], noToken);
    expect(s.code).toBe(2);
    const expected = `the token file ${join(world.ws.dir, 'no-such-token')} (from tokenFile) does not exist: create it holding the secret alone (chmod 600), or correct tokenFile`;
    expect(s.stderr).toContain(expected);
    expect(s.stderr).not.toMatch(/ENOENT/);
    const check = await runCli(['config', 'check', '--config', missing], noToken);
    expect(check.code).toBe(2);
    expect(check.stdout).toContain(`✗ ${expected}`);
    expect(check.stdout).toMatch(/✗ service, data source and App checks skipped: no token to present/);
    // It went on: the folder, the status address and the state file were still checked.
    expect(check.stdout).toMatch(/✓ mapping .*: 1 folder|✓ mapping .*folders?, \d+ files included/);
    expect(check.stdout).toMatch(/state file .*: its folder is writable/);

    // A token file dssync may not read: as nobody when the tests run as root.
    const unreadable = join(world.ws.dir, 'u09-token');
    await writeFile(unreadable, `${TOKEN}\n`, { mode: 0o600 });
    if (process.getuid?.() !== 0) await chmod(unreadable, 0o000);
    const r = process.getuid?.() === 0 ? await asNobody(['datasources', 'list', '--base-url', world.ws.emu.url, '--org', 'org-test', '--token-file', unreadable], {}) : await runCli(['datasources', 'list', '--base-url', world.ws.emu.url, '--org', 'org-test', '--token-file', unreadable], {});
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`the token file ${unreadable} (from --token-file) cannot be read by the user dssync runs as (permission denied): give that user read access`);
    expect(r.stderr).not.toMatch(/EACCES/);

    // A refused token read from tokenFile: the 401 names tokenFile and its path, not DSSYNC_TOKEN.
    const wrongFile = join(world.ws.dir, 'u09-wrong');
    await writeFile(wrongFile, 'not-the-token\n', { mode: 0o600 });
    const wrong = await variantConfig(world, 'u09-wrong', (c) => {
      c.tokenFile = wrongFile;
    });
    const refused = await runCli(['sync', '--config', wrong], noToken);
    expect(refused.code).toBe(3);
    const list = await runCli(['datasources', 'list', '--config', wrong], noToken);
    expect(list.code).toBe(3);
    expect(list.stderr).toContain(`Check the token (from tokenFile ${wrongFile}) and the organization id (--org, DSSYNC_ORG or "organizationId")`);
    expect(list.stderr).not.toMatch(/DSSYNC_TOKEN or --token-file/);
    await world.expectNothingLost();
  });

  it('U10 a refused connection: a one-shot command says at once what it retries and why, once, then each retry with its wait; the daemon says it once and logs each retry', { timeout: 120_000 }, async () => {
    const port = await closedPort();
    const url = `http://127.0.0.1:${port}`;
    const r = await service(['datasources', 'list'], { DSSYNC_BASE_URL: url });
    expect(r.code).toBe(1);
    const notice = `dssync: cannot connect to ${url} (connection refused): retrying each request for up to 16 s; is the service running, and is baseUrl right?`;
    const lines = r.stderr.trim().split('\n');
    expect(lines[0]).toBe(notice);
    expect(lines.filter((l) => l.includes('retrying each request for up to'))).toHaveLength(1);
    // No silent stretch: every retry is told, with its attempt and the wait before the next.
    const retries = lines.filter((l) => l.startsWith(`dssync: warning: cannot connect to ${url} (connection refused): attempt `));
    expect(retries.map((l) => /attempt (\d) of 6 failed; next in \d+\.\d s$/.exec(l)?.[1])).toEqual(['1', '2', '3', '4', '5']);
    expect(lines.at(-1)).toMatch(new RegExp(`^dssync: GET /datastore/v1/data-sources: cannot connect to ${url.replace(/\./g, '\\.')} \\(connection refused\\) \\(E_CONNECTION, after 6 attempts\\); is the service running, and is baseUrl right\\?$`));

    // sync (the world's config allows 2 attempts): the same notice, before the report.
    const s = await dssync(['sync', '--config', world.ws.configPath, '--base-url', url]);
    expect(s.code).toBe(1);
    expect(s.stderr).toContain(`dssync: cannot connect to ${url} (connection refused): retrying each request for up to 1 s`);
    // Two mappings: the second's request retries on its own, each retry told (an open
    // circuit breaker used to hold it for up to 30 s more, in silence: 54 s in all).
    const two = await ownDaemonConfig('u10-two', (c) => {
      const first = (c.mappings as Record<string, unknown>[])[0]!;
      c.mappings = [first, { ...first, id: 'second', dataSource: { name: 'u10-second', llmConnectorIds: ['conn-1'] } }];
    });
    const s2 = await dssync(['sync', '--config', two, '--base-url', url]);
    expect(s2.code).toBe(1);
    expect(s2.stderr.match(/: attempt 1 of 2 failed; next in \d+\.\d s$/gm)).toHaveLength(2);

    const d = await ownDaemonConfig('u10-daemon', (c) => {
      c.status = { listen: '127.0.0.1:0' };
      c.baseUrl = url;
      c.queue = { ...(c.queue as object), maxAttempts: 4 };
    });
    const daemon = await startDaemon(world.ws, { configPath: d });
    try {
      await waitFor(() => daemon.logs().some((l) => l.msg === 'mapping degraded; will retry'), { timeout: 60_000, what: 'the failed pass' });
      const told = daemon.logs().filter((l) => String(l.msg).startsWith('cannot reach the service'));
      expect(told).toHaveLength(1);
      expect(told[0]).toMatchObject({ service: url, problem: 'connection refused' });
      const retried = daemon.logs().filter((l) => String(l.msg).startsWith('request retried, the service cannot be reached'));
      expect(retried[0]).toMatchObject({ level: 40, service: url, problem: 'connection refused', attempt: 1, maxAttempts: 4 });
      expect(typeof retried[0]!.nextDelayMs).toBe('number');
    } finally {
      await daemon.stop();
    }
  });

  it.runIf(hasScript())('U13 the progress line on a terminal has the total and the percentage', { timeout: 120_000 }, async () => {
    for (let i = 0; i < 3; i++) await world.ws.write(`u13/new-${i}.txt`, `new ${i}`);
    try {
      const r = await onTerminal(['sync', '--config', world.ws.configPath], ENV);
      expect(r.code, r.out).toBe(0);
      expect(r.out).toMatch(/\b[1-3]\/3 \((33|66|100)%\)/);
      expect(r.out).toMatch(/^In sync\.$/m);
    } finally {
      await removeQuietly(join(world.ws.share, 'u13'));
      await dssync(['sync', '--config', world.ws.configPath]);
    }
    await world.expectNothingLost();
  });

  it.runIf(hasScript())('U14 on a terminal: one readable line per event from run, no per-file log lines from sync; JSON unchanged when not a terminal', { timeout: 120_000 }, async () => {
    const cfg = await ownDaemonConfig('u14');
    await world.ws.write('u14/one.txt', 'one');
    try {
      // one.txt, just written, may be set aside by the start's pass for the stability window
      // (docs/watch.md) and sent by the follow-up pass: stopped once it is uploaded.
      const run = await onTerminal(['run', '--config', cfg], { ...ENV, DSSYNC_LOG_LEVEL: 'info' }, (out) => /full pass done/.test(out) && /uploaded {2}mapping=name:u14 path=u14\/one\.txt /.test(out));
      const lines = run.out.split('\n');
      // The 8 baseline files and one.txt: one line each.
      const uploaded = lines.filter((l) => /INFO: uploaded/.test(l));
      expect(uploaded, run.out).toHaveLength(9);
      for (const l of uploaded) expect(l).toMatch(/^\[[\d:.]+\] INFO: uploaded {2}mapping=name:u14 path=\S+ documentId=doc_\w+$/);
      expect(uploaded.join('\n')).toMatch(/path=u14\/one\.txt /);
      const pass = lines.filter((l) => /full pass done/.test(l));
      expect(pass).toHaveLength(1);
      // The counts that are zero say nothing: left out.
      expect(pass[0]).toMatch(/full pass done {2}mapping=name:u14 kind=full ok=true uploaded=[89] ms=\d+$/);
      expect(run.out).not.toMatch(/^\s+\w+: /m);
      expect(run.out).not.toMatch(/\{"level"/);

      // sync on a terminal: the summary names the file; no log line repeats it.
      await world.ws.write('u14/two.txt', '');
      const sync = await onTerminal(['sync', '--config', cfg], ENV);
      expect(sync.out).toMatch(/not ingested {2}u14\/two\.txt/);
      expect(sync.out).not.toMatch(/\{"level"|WARN: .*u14\/two\.txt/);

      // Not a terminal (journald): JSON lines, every counter kept.
      await world.ws.write('u14/three.txt', 'three');
      const json = await variantConfig(world, 'u14-json', (c) => {
        c.status = { listen: '127.0.0.1:0' };
        c.statePath = join(world.ws.dir, 'u14', 'state.json');
        (c.mappings as Record<string, unknown>[])[0]!.dataSource = { name: 'u14', llmConnectorIds: ['conn-1'] };
      });
      const child = await startDaemon(world.ws, { configPath: json });
      try {
        await waitFor(() => child.logs().some((l) => l.msg === 'full pass done'), { timeout: 60_000, what: 'a full pass' });
        expect(child.logs().find((l) => l.msg === 'full pass done')).toMatchObject({ replaced: 0, deleted: 0, failed: 0 });
      } finally {
        await child.stop();
      }
    } finally {
      await removeQuietly(join(world.ws.share, 'u14'));
      await dssync(['sync', '--config', world.ws.configPath]);
    }
    await world.expectNothingLost();
  });
});

/** The binary as the user nobody (setpriv, util-linux): what a service account without access meets. */
function asNobody(args: string[], env: Record<string, string> = ENV): Promise<CliResult> {
  const target = nobody();
  if ('skip' in target) throw new Error(target.skip);
  return runCli(args, { HOME: '/tmp', ...env }, undefined, AS_NOBODY, target.bin);
}

/** What nobody runs: the built binary, or a copy nobody can reach (test/helpers/as-nobody.ts). */
let nobodyTarget: NobodyBinary | undefined;
function nobody(): NobodyBinary {
  nobodyTarget ??= nobodyBinary();
  return nobodyTarget;
}

/** `text` as a literal inside a RegExp. */
function esc(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
