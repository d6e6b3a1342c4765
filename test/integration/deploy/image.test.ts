/**
 * The container image, built and run as far as this machine allows (docs/deploy.md, "What was
 * tested"). No registry is reachable and `podman run` does not work in this sandbox (crun:
 * cgroups, setrlimit), so:
 * - the base is a stand-in for node:26-bookworm-slim made from this machine's own files
 *   (make-test-base.sh), imported with `podman import`;
 * - the image is built from deploy/container/Containerfile and the release tarball with
 *   `podman build --isolation=chroot`, in a private podman store (vfs) that is removed after;
 * - its configuration is read back with `podman image inspect`;
 * - its files are exported, and its entrypoint is run from them the way a runtime would: in
 *   new mount, PID and UTS namespaces, chroot into a read-only root, as the image's user, with
 *   its environment and working folder, the state volume, the share (read only), the
 *   credentials folder and the config mounted, against the emulator on loopback.
 * Skipped, saying why, where podman, unshare/nsenter or root are missing; .ci/run installs
 * podman.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN } from '../cli/run-cli.js';
import { waitFor } from '../../helpers/wait-for.js';
import { isLeaseDocument } from '../../../src/engine/lease-view.js';
import { MALLOC_ENV } from '../../../src/cli/malloc-env.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const MAKE_BASE = fileURLToPath(new URL('make-test-base.sh', import.meta.url));
const TOKEN = `image-test-${process.pid}-token`;
const PIN = 'a1b2c3d4e5f60718';
const UID = 10001;
const IMAGE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Why this machine cannot run the test, or undefined. */
function missing(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root (unshare, chroot and mounts)';
  for (const tool of ['podman', 'unshare', 'nsenter', 'chroot', 'ldd']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0) return `${tool} is not installed (.ci/run installs podman)`;
  }
  return undefined;
}

function sh(cmd: string, args: readonly string[], opts: { cwd?: string } = {}): string {
  const r = spawnSync(cmd, args, { cwd: opts.cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

interface ImageConfig {
  User: string;
  Env: string[];
  Entrypoint: string[];
  WorkingDir: string;
  Volumes: Record<string, unknown>;
  StopSignal: string;
  ExposedPorts: Record<string, unknown>;
}

/**
 * What a runtime does with the image's configuration, done by hand: `$1` the exported root,
 * `$2` the host side of the mounts, `$3` the host name; the rest is the entrypoint. The root is
 * remounted read only (readOnlyRootFilesystem) after the volumes are mounted into it.
 */
const CONTAINER = `set -eu
R=$1; M=$2; hostname "$3"; shift 3
mount --make-rprivate /
mount --bind "$R" "$R"
mkdir -p "$R/srv/share" "$R/run/secrets/dssync" "$R/etc/dssync"
mount --bind "$M/state" "$R/var/lib/dssync"
mount --bind -o ro "$M/share" "$R/srv/share"
mount --bind -o ro "$M/secrets" "$R/run/secrets/dssync"
mount --bind -o ro "$M/config" "$R/etc/dssync"
mount -t tmpfs -o size=16m tmpfs "$R/tmp"
mount -t proc proc "$R/proc"
mount --rbind /dev "$R/dev"
mount -o remount,bind,ro "$R"
exec "$@"`;

describe.skipIf(missing() !== undefined)(`the container image${missing() ? ` (skipped: ${missing()})` : ''}`, () => {
  // Made when the suite runs (not when it is collected, skipped or not): afterAll removes it.
  let work = '';
  const podman = (args: readonly string[]): string =>
    sh('podman', ['--root', join(work, 'store/root'), '--runroot', join(work, 'store/run'), '--storage-driver', 'vfs', ...args], { cwd: work });
  let buildLog = '';
  let config: ImageConfig;
  let healthcheck: string[];
  let version: string;
  let rootfs = '';
  let host = '';
  let emulator: ChildProcess | undefined;
  let baseUrl = '';

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'dssync-image-'));
    rootfs = join(work, 'rootfs');
    host = join(work, 'mounts');
    // The release tarball of this checkout (dist/ is built by npm test before vitest runs).
    const out = sh(process.execPath, [join(ROOT, 'scripts/release.mjs'), '--no-build', '--out', join(work, 'release')], { cwd: ROOT });
    const tgz = /release: (\S+\.tgz)/.exec(out)?.[1];
    if (!tgz) throw new Error(`scripts/release.mjs named no tarball:\n${out}`);
    version = /dssync-([^/]+)\.tgz$/.exec(tgz)![1]!;
    mkdirSync(join(work, 'context/release'), { recursive: true });
    mkdirSync(join(work, 'context/deploy/container'), { recursive: true });
    sh('cp', [tgz, join(work, 'context/release/')]);
    sh('cp', [join(ROOT, 'deploy/container/Containerfile'), join(work, 'context/deploy/container/')]);

    sh('bash', [MAKE_BASE, join(work, 'base.tar')]);
    // The node images' PATH: node and the global installs (dssync) in /usr/local/bin.
    podman(['import', '--change', `ENV PATH=${IMAGE_PATH}`, join(work, 'base.tar'), 'localhost/dssync-test-base:1']);
    rmSync(join(work, 'base.tar'));
    // --format docker: the OCI format has no HEALTHCHECK, and podman drops it with a warning.
    buildLog = podman(['build', '--format', 'docker', '--isolation=chroot', '--build-arg', 'BASE=localhost/dssync-test-base:1', '--build-arg', `VERSION=${version}`, '-f', 'deploy/container/Containerfile', '-t', `localhost/dssync:${version}`, join(work, 'context')]);
    const inspected = JSON.parse(podman(['image', 'inspect', `localhost/dssync:${version}`]))[0];
    config = inspected.Config as ImageConfig;
    healthcheck = inspected.Healthcheck?.Test ?? [];

    const id = podman(['create', `localhost/dssync:${version}`]).trim();
    podman(['export', '-o', join(work, 'rootfs.tar'), id]);
    podman(['rm', id]);
    mkdirSync(rootfs);
    sh('tar', ['-C', rootfs, '-xf', join(work, 'rootfs.tar')]);
    rmSync(join(work, 'rootfs.tar'));
    rmSync(join(work, 'store'), { recursive: true, force: true });

    // The volumes: the state writable by the image's user only, the share and the
    // credentials readable by it, the config a folder as a ConfigMap mounts it.
    for (const d of ['state', 'share/sub', 'secrets', 'config']) mkdirSync(join(host, d), { recursive: true });
    chownSync(join(host, 'state'), UID, UID);
    chmodSync(join(host, 'state'), 0o700);
    writeFileSync(join(host, 'share/a.md'), '# a\n');
    writeFileSync(join(host, 'share/sub/b.md'), '# b\n');
    writeFileSync(join(host, 'secrets/dssync-token'), `${TOKEN}\n`);
    chownSync(join(host, 'secrets/dssync-token'), UID, UID);
    chmodSync(join(host, 'secrets/dssync-token'), 0o400);

    emulator = spawn(process.execPath, [BIN, 'emulator', '--port', '0', '--token', TOKEN], { stdio: ['ignore', 'pipe', 'inherit'] });
    let said = '';
    emulator.stdout!.on('data', (b: Buffer) => (said += b.toString()));
    await waitFor(() => /http:\/\/\S+/.test(said), { timeout: 30_000, what: 'the emulator to listen' });
    baseUrl = /http:\/\/\S+/.exec(said)![0];
    writeFileSync(
      join(host, 'config/config.json'),
      JSON.stringify({
        baseUrl,
        organizationId: 'dev-org',
        allowInsecureHttp: true,
        statePath: '/var/lib/dssync/state.json',
        status: { listen: '127.0.0.1:0' },
        mappings: [{ path: '/srv/share', dataSource: { name: 'image-test', llmConnectorIds: ['conn-1'] } }],
      }),
    );
  }, 900_000);

  afterAll(async () => {
    // Every path ends its containers: a failed or timed-out test left `dssync run` running.
    await Promise.all(containers.map(stopContainer));
    emulator?.kill();
    // Hundreds of MB of exported files: slow to remove on a loaded machine.
    if (work) rmSync(work, { recursive: true, force: true });
  }, 300_000);

  it('is built from the Containerfile with the release inside, and configured as the deployment rules say', () => {
    expect(buildLog).toContain(`${version} (commit`); // the RUN step's `dssync --version`
    expect(config.User).toBe(`${UID}:${UID}`);
    expect(config.Entrypoint).toEqual(['dssync', 'run', '--config', '/etc/dssync/config.json']);
    expect(Object.keys(config.Volumes)).toEqual(['/var/lib/dssync']);
    expect(config.StopSignal).toBe('SIGTERM');
    expect(config.Env).toContain('CREDENTIALS_DIRECTORY=/run/secrets/dssync');
    // glibc's malloc as the systemd units set it (docs/deploy.md): memory at rest.
    expect(config.Env).toEqual(expect.arrayContaining(Object.entries(MALLOC_ENV).map(([k, v]) => `${k}=${v}`)));
    expect(healthcheck[0]).toBe('CMD');
    expect(healthcheck.join(' ')).toContain('/healthz');
  });

  interface Container {
    child: ChildProcess;
    log: () => string;
    exited: Promise<number | null>;
  }
  const containers: Container[] = [];

  /** The entrypoint, run as the image says, in its own namespaces and with the given host name. */
  function startContainer(hostName: string): Container {
    const [user, group] = config.User.split(':');
    const env = [...config.Env, `DSSYNC_INSTALLATION_ID=${PIN}`];
    const inner = `cd ${config.WorkingDir} && exec "$@"`;
    const child = spawn(
      'unshare',
      ['--mount', '--pid', '--uts', '--fork', '--kill-child', 'sh', '-c', CONTAINER, 'container', rootfs, host, hostName,
        'chroot', `--userspec=${user}:${group}`, rootfs, '/usr/bin/env', '-i', ...env, 'sh', '-c', inner, 'entry', ...config.Entrypoint],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let log = '';
    child.stdout!.on('data', (b: Buffer) => (log += b.toString()));
    child.stderr!.on('data', (b: Buffer) => (log += b.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const container = { child, log: () => log, exited };
    containers.push(container);
    return container;
  }

  /**
   * Ends a container still running: its PID 1 is killed, which ends its PID namespace.
   * Killing `unshare` alone is not enough: `--kill-child`'s parent-death signal is cleared when
   * chroot switches to the image's user.
   */
  async function stopContainer(c: Container): Promise<void> {
    if (c.child.exitCode !== null || c.child.signalCode !== null) return;
    try {
      const pid = pidOne(c.child.pid!);
      if (pid > 0) process.kill(pid, 'SIGKILL');
    } catch {
      // Not forked yet, or already gone: unshare's own end below is enough.
    }
    c.child.kill('SIGKILL');
    await c.exited;
  }

  /** The host PID of the container's PID 1 (unshare's only child, once the exec chain has run). */
  function pidOne(unsharePid: number): number {
    const children = readFileSync(`/proc/${unsharePid}/task/${unsharePid}/children`, 'utf8').trim();
    return Number(children.split(/\s+/)[0]);
  }

  async function documents(): Promise<string[]> {
    const h = { authorization: `Bearer ${TOKEN}`, 'x-service-organization-id': 'dev-org' };
    const sources = (await (await fetch(`${baseUrl}/datastore/v1/data-sources`, { headers: h })).json()) as { items: { data_source_id: string; name: string }[] };
    const ds = sources.items.find((s) => s.name === 'image-test');
    if (!ds) return [];
    const docs = (await (await fetch(`${baseUrl}/datastore/v1/data-sources/${ds.data_source_id}/documents?limit=1000`, { headers: h })).json()) as { items: { document_id: string; name?: string; metadata?: Record<string, string> }[] };
    // The files' documents: the mapping's lease marker aside (docs/reliability.md, "The lease").
    return docs.items.filter((d) => !isLeaseDocument(d)).map((d) => d.document_id).sort();
  }

  /** The process's open inotify instances. */
  function inotifyInstances(pid: number): number {
    const target = (fd: string): string | undefined => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        return undefined; // closed meanwhile
      }
    };
    return readdirSync(`/proc/${pid}/fd`).filter((fd) => target(fd) === 'anon_inode:inotify').length;
  }

  const passes = (log: string): number => log.split('\n').filter((l) => l.includes('"msg":"full pass done"')).length;

  it('its entrypoint mirrors the share with a read-only root as uid 10001, answers its healthcheck, follows a change and stops on SIGTERM with 0; recreated with another host name it owns the same documents', async () => {
    const first = startContainer('dssync-0');
    // Files written just before the start are set aside for the stability window, then sent.
    await waitFor(async () => (await documents()).length === 2 || first.child.exitCode !== null, { timeout: 60_000, what: "the share's two files", describe: first.log });
    expect(first.child.exitCode, first.log()).toBeNull();
    expect(first.log()).not.toMatch(/"level":[5-6]\d/);
    const pid = pidOne(first.child.pid!);
    expect(readFileSync(`/proc/${pid}/status`, 'utf8')).toMatch(new RegExp(`^Uid:\\s+${UID}\\s`, 'm'));

    // The HEALTHCHECK's own command, in the container's mount namespace and root, as its user.
    const port = /"url":"http:\/\/127\.0\.0\.1:(\d+)"/.exec(first.log())?.[1];
    expect(port).toBeDefined();
    expect(healthcheck[0]).toBe('CMD');
    const probe = healthcheck.slice(1).map((a) => a.replace('127.0.0.1:8787', `127.0.0.1:${port}`));
    const health = spawnSync('nsenter', ['--target', String(pid), '--mount', '--root', '--wd', '-S', String(UID), '-G', String(UID), '/usr/bin/env', '-i', `PATH=${IMAGE_PATH}`, ...probe], { encoding: 'utf8' });
    expect(health.status, health.stderr).toBe(0);

    // The watch works through the read-only bind mount of the share.
    writeFileSync(join(host, 'share/c.md'), '# c\n');
    await waitFor(async () => (await documents()).length === 3, { timeout: 60_000, what: 'the new file to be uploaded' });
    // On dssync's own inotify module, which the release carries built: one inotify instance, no fs.watch's.
    expect(readFileSync(`/proc/${pid}/maps`, 'utf8')).toMatch(/\/dist\/src\/native\/inotify\.node$/m);
    expect(inotifyInstances(pid)).toBe(1);
    const owned = await documents();

    process.kill(pid, 'SIGTERM');
    expect(await first.exited).toBe(0);
    expect(first.log()).toContain('"msg":"stopped"');

    // A pod recreated on another node: new host name, same state volume, same pinned identity.
    const second = startContainer('dssync-0-recreated');
    await waitFor(() => passes(second.log()) >= 1 || second.child.exitCode !== null, { timeout: 60_000, what: "the recreated container's first full pass" });
    expect(second.child.exitCode, second.log()).toBeNull();
    expect(second.log()).not.toContain('"msg":"uploaded"');
    expect(second.log()).not.toMatch(/another installation|"level":[5-6]\d/);
    expect(await documents()).toEqual(owned);
    process.kill(pidOne(second.child.pid!), 'SIGTERM');
    expect(await second.exited).toBe(0);
  }, 300_000);
});
