/**
 * The systemd units an operator installs (systemd/dssync.service, systemd/dssync@.service):
 * what they run and hand over to dssync, checked against the config loader's contract;
 * systemd's own verdict on them (`systemd-analyze verify` and `security --offline`); and
 * that Node and dssync still work inside their system-call filter. systemd need not be
 * PID 1: the filter is applied by a small libseccomp launcher (seccomp-exec.c), built here.
 * Checks whose tools are missing are skipped, and say which tool is missing.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CREDENTIAL_NAMES } from '../../../src/config/connection.js';
import { CREDENTIAL_ABSENT } from '../../../src/auth/settings.js';
import { MALLOC_ENV } from '../../../src/cli/malloc-env.js';
import { startEmulator } from '@dssync/emulator';
import { BIN } from '../cli/run-cli.js';

const SYSTEMD_DIR = fileURLToPath(new URL('../../../systemd/', import.meta.url));
const LAUNCHER_SOURCE = fileURLToPath(new URL('./seccomp-exec.c', import.meta.url));
/** The exposure target for `systemd-analyze security` (0 = locked down, 10 = exposed). */
const MAX_EXPOSURE = 2.5;

interface UnitCase {
  file: string;
  /** The name systemd-analyze sees: a template is analysed as one of its instances. */
  installedAs: string;
  config: string;
  /** credential name -> the root-only file it is loaded from. */
  credentialFiles: Record<string, string>;
  stateDirectory: string;
}

const credentialFiles = (prefix: string): Record<string, string> => ({
  'dssync-token': `${prefix}token`,
  'dssync-password': `${prefix}password`,
  'dssync-client-secret': `${prefix}client-secret`,
});

const UNITS: UnitCase[] = [
  { file: 'dssync.service', installedAs: 'dssync.service', config: '/etc/dssync/config.json', credentialFiles: credentialFiles('/etc/dssync/'), stateDirectory: 'dssync' },
  { file: 'dssync@.service', installedAs: 'dssync@test.service', config: '/etc/dssync/%i.json', credentialFiles: credentialFiles('/etc/dssync/%i.'), stateDirectory: 'dssync/%i' },
];

// --- reading unit files ----------------------------------------------------------------

interface Directive {
  section: string;
  key: string;
  value: string;
}

function parseUnit(text: string): Directive[] {
  const out: Directive[] = [];
  let section = '';
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = pending + raw.trim();
    pending = '';
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    if (line.endsWith('\\')) {
      pending = `${line.slice(0, -1)} `;
      continue;
    }
    const header = /^\[(.+)\]$/.exec(line);
    if (header?.[1]) {
      section = header[1];
      continue;
    }
    const eq = line.indexOf('=');
    if (eq < 0) throw new Error(`not a key=value line in [${section}]: ${line}`);
    out.push({ section, key: line.slice(0, eq).trim(), value: line.slice(eq + 1).trim() });
  }
  return out;
}

const unitText = (file: string): string => readFileSync(join(SYSTEMD_DIR, file), 'utf8');
const directivesOf = (file: string): Directive[] => parseUnit(unitText(file));

/** Every value of `key` in [Service], in order. */
function all(file: string, key: string): string[] {
  return directivesOf(file)
    .filter((d) => d.section === 'Service' && d.key === key)
    .map((d) => d.value);
}

/** The value in effect (the last assignment). */
function one(file: string, key: string): string | undefined {
  return all(file, key).at(-1);
}

/** Environment= assignments as a map (several per line are allowed). */
function environment(file: string): Map<string, string> {
  const env = new Map<string, string>();
  for (const value of all(file, 'Environment')) {
    for (const pair of value.match(/"[^"]*"|\S+/g) ?? []) {
      const unquoted = pair.replace(/^"|"$/g, '');
      const eq = unquoted.indexOf('=');
      if (eq > 0) env.set(unquoted.slice(0, eq), unquoted.slice(eq + 1));
    }
  }
  return env;
}

function seconds(span: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(ms|s|min|m)?$/.exec(span);
  if (!m) throw new Error(`unexpected time span ${span}`);
  const n = Number(m[1]);
  return m[2] === 'ms' ? n / 1000 : m[2] === 'min' || m[2] === 'm' ? n * 60 : n;
}

// --- running tools ---------------------------------------------------------------------

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

function which(cmd: string): string | undefined {
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(delimiter)) {
    const path = join(dir, cmd);
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not in this folder
    }
  }
  return undefined;
}

const ANALYZE = which('systemd-analyze');
const NO_ANALYZE = 'systemd-analyze is not installed (it comes with systemd)';

let work: string;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'dssync-units-'));
});
afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

/**
 * Writes the unit under the name systemd will know it by, with `extra` lines appended to
 * [Service] (what a drop-in would add), into a fresh folder; returns its path.
 */
async function installCopy(unit: UnitCase, extra: string[] = [], text = unitText(unit.file)): Promise<string> {
  const dir = await mkdtemp(join(work, 'unit-'));
  const path = join(dir, unit.installedAs);
  const withExtra = extra.length ? text.replace('\n[Install]', `\n${extra.join('\n')}\n\n[Install]`) : text;
  await writeFile(path, withExtra);
  return path;
}

// --- what the units hand to dssync -----------------------------------------------------

describe.each(UNITS)('$file', (unit) => {
  it('runs `dssync run` with its config file in the foreground', () => {
    expect(one(unit.file, 'Type')).toBe('simple');
    expect(one(unit.file, 'ExecStart')).toBe(`/usr/bin/env dssync run --config ${unit.config}`);
    // Without it journald would tag every log line with the name of /usr/bin/env.
    expect(one(unit.file, 'SyslogIdentifier')).toMatch(/^dssync/);
    expect(environment(unit.file).get('NODE_ENV')).toBe('production');
    // glibc's malloc settings, the daemon's own values (a daemon started without them sets them itself).
    for (const [k, v] of Object.entries(MALLOC_ENV)) expect(environment(unit.file).get(k), k).toBe(v);
  });

  it('reloads with SIGHUP, stops with SIGTERM leaving the daemon its 10 s, restarts after a crash but not after a config or token error', () => {
    expect(one(unit.file, 'ExecReload')).toBe('/bin/kill -HUP $MAINPID');
    expect(one(unit.file, 'KillSignal')).toBe('SIGTERM');
    expect(seconds(one(unit.file, 'TimeoutStopSec') ?? '90s')).toBeGreaterThan(10);
    expect(one(unit.file, 'Restart')).toBe('on-failure');
    expect(one(unit.file, 'RestartSec')).toBe('5s');
    // Exit codes of DESIGN §6: 2 = usage/config error, 3 = credentials refused.
    expect((one(unit.file, 'RestartPreventExitStatus') ?? '').split(/\s+/)).toEqual(expect.arrayContaining(['2', '3']));
  });

  it('hands every secret an auth type may need over as an optional systemd credential, from a root-only file in /etc/dssync', () => {
    const loaded = new Map(all(unit.file, 'LoadCredential').map((v) => v.split(':') as [string, string]));
    const defaults = new Map(all(unit.file, 'SetCredential').map((v) => v.split(':') as [string, string]));
    expect([...loaded.keys()].sort()).toEqual(['dssync-client-secret', 'dssync-password', 'dssync-token']);
    expect(CREDENTIAL_NAMES).toContain('dssync-token');
    for (const [name, path] of loaded) {
      expect(path).toBe(unit.credentialFiles[name]);
      // A missing file must not fail the unit (243/CREDENTIALS): the default stands in, and
      // dssync reads it as "not given".
      expect(defaults.get(name), name).toBe(CREDENTIAL_ABSENT);
    }
    // No DSSYNC_TOKEN_FILE pointing at the credential: with an OIDC config it would name a
    // file holding the marker. The loader prefers a credential over the config's files itself.
    expect(environment(unit.file).has('DSSYNC_TOKEN_FILE')).toBe(false);
  });

  it('holds no secret: no token in the environment, the command line or an inline credential', () => {
    const text = unitText(unit.file);
    const env = environment(unit.file);
    expect(env.has('DSSYNC_TOKEN')).toBe(false);
    // SetCredential= only carries the marker that stands for "file absent", never a value.
    for (const v of all(unit.file, 'SetCredential')) expect(v).toMatch(new RegExp(`^dssync-[a-z-]+:${CREDENTIAL_ABSENT}$`));
    expect(all(unit.file, 'SetCredentialEncrypted')).toEqual([]);
    expect(all(unit.file, 'EnvironmentFile')).toEqual([]);
    expect(all(unit.file, 'ExecStart').join(' ')).not.toMatch(/--token(?!-file)/);
    expect(text).not.toMatch(/Bearer\s+\S/i);
    // Nothing that looks like a key: a long run of token characters outside a path.
    for (const d of directivesOf(unit.file)) expect(d.value, `${d.key}=`).not.toMatch(/(?<![/\w])[A-Za-z0-9_+-]{32,}/);
  });

  it('keeps its state in its own 0700 state directory, the only place it may write', () => {
    expect(one(unit.file, 'StateDirectory')).toBe(unit.stateDirectory);
    expect(one(unit.file, 'StateDirectoryMode')).toBe('0700');
    expect(environment(unit.file).get('DSSYNC_STATE_PATH')).toBe(`%S/${unit.stateDirectory}/state.json`);
    expect(one(unit.file, 'UMask')).toBe('0077');
    expect(one(unit.file, 'ProtectSystem')).toBe('strict');
    // The mapped folders are only read: nothing is opened for writing.
    expect(all(unit.file, 'ReadWritePaths')).toEqual([]);
    expect(one(unit.file, 'DynamicUser')).toBe('yes');
  });

  it('leaves on what Node needs: JIT memory, memory protection keys, /proc/sys, network sockets', () => {
    // V8's JIT needs writable-then-executable memory: Node aborts at start without it.
    expect(one(unit.file, 'MemoryDenyWriteExecute') ?? 'no').toBe('no');
    // Node 20 calls pkey_alloc at start; systemd 252's @system-service lacks it.
    const allowed = all(unit.file, 'SystemCallFilter').filter((v) => !v.startsWith('~'));
    expect(allowed.join(' ').split(/\s+/)).toEqual(expect.arrayContaining(['@system-service', '@pkey']));
    // The state lock reads /proc/sys/kernel/random/boot_id, hidden by ProcSubset=pid.
    expect(one(unit.file, 'ProcSubset') ?? 'all').toBe('all');
    expect((one(unit.file, 'RestrictAddressFamilies') ?? '').split(/\s+/).sort()).toEqual(['AF_INET', 'AF_INET6', 'AF_UNIX']);
    expect(one(unit.file, 'PrivateNetwork') ?? 'no').toBe('no');
  });
});

it('dssync@.service matches dssync.service line for line, apart from the instance names', () => {
  const forInstance = (d: Directive): string => {
    const value = d.value
      .replace('/etc/dssync/%i.json', '/etc/dssync/config.json')
      .replace(/\/etc\/dssync\/%i\.(token|password|client-secret)/, '/etc/dssync/$1')
      .replace(/dssync\/%i/g, 'dssync')
      .replace(/dssync[@-]%i/g, 'dssync');
    return `[${d.section}] ${d.key}=${value}`;
  };
  const template = directivesOf('dssync@.service').map(forInstance);
  const main = directivesOf('dssync.service').map((d) => `[${d.section}] ${d.key}=${d.value}`);
  expect(template).toEqual(main);
  // Each instance has its own user, so that one cannot read another's token or state.
  expect(one('dssync@.service', 'User')).toBe('dssync-%i');
});

// --- systemd's verdict ------------------------------------------------------------------

describe.each(UNITS)('systemd-analyze on $file', (unit) => {
  const mentionsUnit = (out: string): string[] => out.split('\n').filter((l) => l.includes(unit.installedAs));

  it('verify finds nothing to complain about', { timeout: 30_000 }, async (ctx) => {
    ctx.skip(!ANALYZE, NO_ANALYZE);
    const path = await installCopy(unit);
    const r = await run(ANALYZE as string, ['verify', path]);
    expect(mentionsUnit(r.stdout + r.stderr), r.stdout + r.stderr).toEqual([]);
    expect(r.code, r.stderr).toBe(0);

    // The same check on a copy with a misspelt key and an unknown binary: proves that the
    // empty answer above means "checked and fine", not "not checked".
    const broken = unitText(unit.file).replace('Restart=on-failure', 'Restrat=on-failure').replace('/usr/bin/env dssync', '/nonexistent/dssync');
    const bad = await run(ANALYZE as string, ['verify', await installCopy(unit, [], broken)]);
    expect(mentionsUnit(bad.stdout + bad.stderr).join('\n')).toMatch(/Restrat/);
    expect(bad.code).not.toBe(0);
  });

  const variants: [string, string[]][] = [
    ['as shipped', []],
    ['with read access through a group (README §5)', ['SupplementaryGroups=dssync-read']],
    ['with a group and PrivateUsers=no (README §5)', ['SupplementaryGroups=dssync-read', 'PrivateUsers=no']],
  ];
  it.for(variants)(`security rates the exposure at ${MAX_EXPOSURE} or lower, %s`, { timeout: 30_000 }, async ([, extra], ctx) => {
    ctx.skip(!ANALYZE, NO_ANALYZE);
    const path = await installCopy(unit, extra);
    const r = await run(ANALYZE as string, ['security', '--offline=true', path]);
    const m = /Overall exposure level for \S+: (\d+(?:\.\d+)?)/.exec(r.stdout);
    expect(m, `no exposure level in:\n${r.stdout}\n${r.stderr}`).not.toBeNull();
    expect(Number(m?.[1]), r.stdout).toBeLessThanOrEqual(MAX_EXPOSURE);
  });
});

// --- Node inside the units' sandbox -------------------------------------------------------

/** The system calls the unit's SystemCallFilter= lines allow, expanded by systemd-analyze. */
async function allowedSyscalls(file: string): Promise<Set<string>> {
  const dump = await run(ANALYZE as string, ['syscall-filter']);
  const groups = new Map<string, string[]>();
  let current: string[] | undefined;
  for (const line of dump.stdout.split('\n')) {
    if (line.startsWith('@')) groups.set(line.trim(), (current = []));
    else if (current && line.trim() && !line.trim().startsWith('#')) current.push(line.trim());
  }
  const expand = (item: string, seen = new Set<string>()): string[] => {
    if (!item.startsWith('@')) return [item];
    const members = groups.get(item);
    if (!members) throw new Error(`systemd-analyze does not know the group ${item}`);
    if (seen.has(item)) return [];
    seen.add(item);
    return members.flatMap((m) => expand(m, seen));
  };
  const filters = all(file, 'SystemCallFilter');
  if (filters[0]?.startsWith('~')) throw new Error(`${file}: expected an allow-list first in SystemCallFilter=`);
  const allowed = new Set<string>();
  for (const f of filters) {
    const deny = f.startsWith('~');
    for (const name of (deny ? f.slice(1) : f).trim().split(/\s+/).flatMap((i) => expand(i))) {
      if (deny) allowed.delete(name);
      else allowed.add(name);
    }
  }
  return allowed;
}

const FAMILY_NUMBERS: Record<string, number> = { AF_UNIX: 1, AF_INET: 2, AF_INET6: 10 };

/**
 * What the daemon does, in miniature and without timing: the status endpoint and an HTTP
 * client on loopback, a folder watch (inotify), the state file's exclusive lock and atomic
 * write (fsync + rename), a streamed hash, /proc/sys/kernel/random/boot_id, a worker
 * thread, a name lookup and a SIGHUP handler.
 */
const DAEMON_LIKE_WORK = `
const fs = require('node:fs'), path = require('node:path'), os = require('node:os');
const http = require('node:http'), crypto = require('node:crypto'), dns = require('node:dns/promises');
const { Worker } = require('node:worker_threads');
(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dssync-sandbox-'));
  const watcher = fs.watch(dir, () => {});
  const server = http.createServer((q, r) => r.end('{"ok":true}'));
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const res = await fetch('http://127.0.0.1:' + server.address().port + '/status');
  if (!(await res.json()).ok) throw new Error('bad answer');
  fs.writeFileSync(path.join(dir, 'state.json.lock'), String(process.pid), { flag: 'wx', mode: 0o600 });
  const tmp = path.join(dir, 'state.json.tmp');
  const fd = fs.openSync(tmp, 'w', 0o600);
  fs.writeSync(fd, '{}');
  fs.fsyncSync(fd);
  fs.closeSync(fd);
  fs.renameSync(tmp, path.join(dir, 'state.json'));
  await new Promise((ok, ko) => {
    const h = crypto.createHash('sha256');
    fs.createReadStream(process.execPath, { end: 1 << 20 }).on('data', (d) => h.update(d)).on('end', ok).on('error', ko);
  });
  fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8');
  fs.readFileSync('/proc/' + process.pid + '/stat', 'utf8');
  await new Promise((ok, ko) => new Worker('require("node:worker_threads").parentPort.postMessage(1)', { eval: true }).on('message', ok).on('error', ko));
  await dns.lookup('localhost');
  await new Promise((ok) => { process.once('SIGHUP', ok); process.kill(process.pid, 'SIGHUP'); });
  watcher.close();
  await new Promise((ok) => server.close(ok));
  fs.rmSync(dir, { recursive: true });
  console.log('sandboxed work done');
})().catch((e) => { console.error(e); process.exit(1); });
`;

describe('Node inside the system-call filter of dssync.service', () => {
  let launcher: string | undefined;
  let allowList: string;
  let families: string;
  let unavailable: string | undefined;

  beforeAll(async () => {
    if (!ANALYZE) return void (unavailable = NO_ANALYZE);
    const cc = which('cc') ?? which('gcc');
    if (!cc) return void (unavailable = 'no C compiler (cc) to build the seccomp launcher');
    const out = join(work, 'seccomp-exec');
    const built = await run(cc, ['-O1', '-o', out, LAUNCHER_SOURCE, '-l:libseccomp.so.2']);
    if (built.code !== 0) return void (unavailable = `the seccomp launcher does not build (libseccomp.so.2 missing?): ${built.stderr.trim()}`);
    const probe = await run(out, ['-a', '/dev/null', '--', '/bin/true']);
    if (probe.code === 126) return void (unavailable = `seccomp filters cannot be loaded here: ${probe.stderr.trim()}`);
    launcher = out;
    allowList = join(work, 'allowed-syscalls.txt');
    await writeFile(allowList, [...(await allowedSyscalls('dssync.service'))].join('\n') + '\n');
    families = (one('dssync.service', 'RestrictAddressFamilies') ?? '')
      .split(/\s+/)
      .map((f) => FAMILY_NUMBERS[f] ?? Number.NaN)
      .join(',');
  }, 60_000);

  const sandboxed = (cmd: string, args: string[], env?: NodeJS.ProcessEnv): Promise<Run> =>
    run(launcher as string, ['-a', allowList, '-f', families, '--', cmd, ...args], env);

  it('a call outside the filter is really refused (the check below is not vacuous)', { timeout: 30_000 }, async (ctx) => {
    ctx.skip(!launcher, unavailable);
    // setgroups is in @privileged, which the units take out of @system-service.
    const r = await sandboxed(process.execPath, ['-e', 'process.setgroups([0])']);
    expect(r.signal).toBe('SIGSYS');
  });

  it('Node starts and does the daemon kind of work', { timeout: 30_000 }, async (ctx) => {
    ctx.skip(!launcher, unavailable);
    const r = await sandboxed(process.execPath, ['-e', DAEMON_LIKE_WORK]);
    expect(r.signal, `killed by ${r.signal}: a system call the unit does not allow`).toBeNull();
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe('sandboxed work done');
  });

  it('the dssync binary talks to the service', { timeout: 30_000 }, async (ctx) => {
    ctx.skip(!launcher, unavailable);
    ctx.skip(!existsSync(BIN), `${BIN} is not built (npx tsc -p tsconfig.build.json; node scripts/postbuild.mjs)`);
    const emu = await startEmulator({ token: 'unit-token', orgs: ['unit-org'] });
    try {
      const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', DSSYNC_BASE_URL: emu.url, DSSYNC_ORG: 'unit-org', DSSYNC_TOKEN: 'unit-token' };
      const created = await sandboxed(process.execPath, [BIN, 'datasources', 'create', '--name', 'Sandboxed', '--connector', 'conn-1', '--json'], env);
      expect(created.signal).toBeNull();
      expect(created.code, created.stderr).toBe(0);
      const listed = await sandboxed(process.execPath, [BIN, 'datasources', 'list', '--json'], env);
      expect(listed.code, listed.stderr).toBe(0);
      expect((JSON.parse(listed.stdout) as { name?: string }[]).map((d) => d.name)).toEqual(['Sandboxed']);
    } finally {
      await emu.close();
    }
  });
});
