/**
 * Every administration subcommand, run as the built binary against an in-process
 * emulator: human output and --json (normalised records with id and raw).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator } from '@dssync/emulator';
import { jsonOf, requireBuiltBinary, runCli, type CliResult } from './run-cli.js';

type Emulator = Awaited<ReturnType<typeof startEmulator>>;
interface Rec {
  id: string;
  name?: string;
  url?: string;
  metadata?: Record<string, unknown>;
  llmConnectorIds?: string[];
  text?: string;
  documentId?: string;
  raw: Record<string, unknown>;
}

let emu: Emulator;
let dir: string;
let env: Record<string, string>;

const cli = (...args: string[]): Promise<CliResult> => runCli(args, env);

/** Runs a command that must succeed, and returns its output. */
async function ok(...args: string[]): Promise<CliResult> {
  const r = await cli(...args);
  expect(r.stderr, `dssync ${args.join(' ')}`).toBe('');
  expect(r.code, `dssync ${args.join(' ')}`).toBe(0);
  return r;
}

const okJson = async <T = Rec>(...args: string[]): Promise<T> => jsonOf<T>(await ok(...args, '--json'));

function expectRecord(r: Rec): void {
  expect(typeof r.id).toBe('string');
  expect(r.id).not.toBe('');
  expect(r.raw).toBeTypeOf('object');
}

beforeAll(async () => {
  requireBuiltBinary();
  // A small page size, so that the lists below are read over several pages.
  emu = await startEmulator({ pageSize: 2 });
  env = { DSSYNC_BASE_URL: emu.url, DSSYNC_ORG: 'dev-org', DSSYNC_TOKEN: 'dev-token' };
  dir = await mkdtemp(join(tmpdir(), 'dssync-cli-admin-'));
  await writeFile(join(dir, 'alpha.txt'), 'Alpha document.\n\nThe quick brown fox jumps over the lazy dog.\n');
  await writeFile(join(dir, 'beta.md'), '# Beta\n\nSecond document, in Markdown.\n');
  await writeFile(join(dir, 'gamma.txt'), 'Gamma: the third one.\n');
  await writeFile(join(dir, 'delta.txt'), 'Delta stands alone.\n');
});

afterAll(async () => {
  await emu?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('dssync datasources', () => {
  it('creates, shows, lists, renames and deletes data sources', { timeout: 180_000 }, async () => {
    const created = await okJson('datasources', 'create', '--name', 'Handbook', '--connector', 'conn-1', '--connector', 'conn-2');
    expectRecord(created);
    expect(created).toMatchObject({ name: 'Handbook', llmConnectorIds: ['conn-1', 'conn-2'] });

    const human = await ok('datasources', 'create', '--name', 'Policies', '--connector', 'conn-1');
    const otherId = /^Created data source (\S+)\.$/m.exec(human.stdout)?.[1];
    expect(otherId).toBeDefined();
    expect(human.stdout).toMatch(/^name: +Policies$/m);
    const third = await okJson('datasources', 'create', '--name', 'Third', '--connector', 'conn-1');

    const [got, gotHuman, listed, listedHuman, renamed] = await Promise.all([
      okJson('datasources', 'get', created.id),
      ok('datasources', 'get', created.id),
      okJson<Rec[]>('datasources', 'list'),
      ok('datasources', 'list'),
      okJson('datasources', 'update', third.id, '--name', 'Renamed'),
    ]);
    expectRecord(got);
    expect(got).toMatchObject({ id: created.id, name: 'Handbook' });
    expect(gotHuman.stdout).toMatch(new RegExp(`^id: +${created.id}$`, 'm'));
    expect(gotHuman.stdout).toMatch(/^connectors: +conn-1, conn-2$/m);
    // Three data sources over pages of two: the listing followed the paging.
    expect(listed.map((r) => r.id).sort()).toEqual([created.id, otherId, third.id].sort());
    listed.forEach(expectRecord);
    const [header, ...rows] = listedHuman.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^ID +NAME +CONNECTORS$/);
    expect(rows).toHaveLength(3);
    expect(rows.find((l) => l.startsWith(created.id))).toMatch(/Handbook +conn-1, conn-2$/);
    expect(renamed).toMatchObject({ id: third.id, name: 'Renamed' });
    expect(await okJson('datasources', 'get', third.id)).toMatchObject({ name: 'Renamed' });

    // By exact name (issue 25.10): one of that name is shown; two of that name exit 2 with their ids.
    expect(await okJson('datasources', 'get', 'Renamed')).toMatchObject({ id: third.id, name: 'Renamed' });
    const twin = await okJson('datasources', 'create', '--name', 'Renamed', '--connector', 'conn-1');
    const ambiguous = await cli('datasources', 'get', 'Renamed');
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toContain('2 data sources are named "Renamed"');
    expect(ambiguous.stderr).toContain(third.id);
    expect(ambiguous.stderr).toContain(twin.id);
    expect(ambiguous.stderr).toContain('name one by its id');
    await ok('datasources', 'delete', twin.id, '--yes');
    const nameless = await cli('datasources', 'get', 'No such name');
    expect(nameless.code).toBe(1);
    expect(nameless.stderr).toBe('dssync: no data source has the id or the name "No such name" (`dssync datasources list` shows each one\'s id and name)\n');

    const deleted = await ok('datasources', 'delete', otherId!, '--yes');
    expect(deleted.stdout).toBe(`Deleted data source ${otherId}.\n`);
    expect(await okJson('datasources', 'delete', third.id, '--yes')).toEqual({ id: third.id, deleted: true });
    const after = await okJson<Rec[]>('datasources', 'list');
    expect(after.map((r) => r.id)).toEqual([created.id]);
    const gone = await cli('datasources', 'get', otherId!);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toBe(`dssync: no data source has the id or the name "${otherId}" (\`dssync datasources list\` shows each one's id and name)\n`);
  });
});

describe('dssync documents and chunks', () => {
  it('uploads several files in ONE request and lists, shows, updates and deletes them', { timeout: 180_000 }, async () => {
    const ds = await okJson('datasources', 'create', '--name', 'Docs', '--connector', 'conn-1');
    const before = emu.stats();
    const uploaded = await okJson<Rec[]>(
      'documents', 'upload', ds.id, join(dir, 'alpha.txt'), join(dir, 'beta.md'), join(dir, 'gamma.txt'),
    );
    const afterUpload = emu.stats();
    expect(afterUpload.uploads - before.uploads).toBe(1);
    expect(afterUpload.filesUploaded - before.filesUploaded).toBe(3);
    expect(uploaded.map((d) => d.name)).toEqual(['alpha.txt', 'beta.md', 'gamma.txt']);
    uploaded.forEach(expectRecord);

    const one = await ok('documents', 'upload', ds.id, join(dir, 'delta.txt'));
    expect(one.stdout).toMatch(new RegExp(`^Uploaded 1 document to data source ${ds.id}\\.\\nID +NAME +URL +STATUS\\n\\S+ +delta\\.txt`));

    const [list, listHuman, [alpha]] = await Promise.all([
      okJson<Rec[]>('documents', 'list', ds.id),
      ok('documents', 'list', ds.id),
      Promise.resolve(uploaded),
    ]);
    expect(list.map((d) => d.name).sort()).toEqual(['alpha.txt', 'beta.md', 'delta.txt', 'gamma.txt']);
    list.forEach(expectRecord);
    expect(listHuman.stdout.split('\n')[0]).toMatch(/^ID +NAME +URL +STATUS$/);
    expect(listHuman.stdout.trimEnd().split('\n')).toHaveLength(5);

    // update: the fields not given keep their values.
    const id = alpha!.id;
    const set = await okJson('documents', 'update', ds.id, id, '--url', 'https://intranet.example/alpha', '--metadata', '{"team":"hr","year":2025}');
    expect(set).toMatchObject({ id, name: 'alpha.txt', url: 'https://intranet.example/alpha', metadata: { team: 'hr', year: 2025 } });
    await ok('documents', 'update', ds.id, id, '--name', 'alpha-renamed.txt');
    const renamed = await okJson('documents', 'get', ds.id, id);
    expect(renamed).toMatchObject({ name: 'alpha-renamed.txt', url: 'https://intranet.example/alpha', metadata: { team: 'hr', year: 2025 } });
    expectRecord(renamed);
    const meta = await ok('documents', 'update', ds.id, id, '--metadata', '{"team":"legal"}');
    expect(meta.stdout).toMatch(new RegExp(`^Updated document ${id}\\.$`, 'm'));
    const human = await ok('documents', 'get', ds.id, id);
    expect(human.stdout).toMatch(/^name: +alpha-renamed\.txt$/m);
    expect(human.stdout).toMatch(/^url: +https:\/\/intranet\.example\/alpha$/m);
    expect(human.stdout).toContain('"team": "legal"');
    expect(human.stdout).not.toContain('"year"');

    const del = await okJson('documents', 'delete', ds.id, id);
    expect(del).toEqual({ id, deleted: true });
    const delHuman = await ok('documents', 'delete', ds.id, uploaded[1]!.id);
    expect(delHuman.stdout).toBe(`Deleted document ${uploaded[1]!.id} from data source ${ds.id}.\n`);
    const rest = await okJson<Rec[]>('documents', 'list', ds.id);
    expect(rest.map((d) => d.name).sort()).toEqual(['delta.txt', 'gamma.txt']);
    const gone = await cli('documents', 'get', ds.id, id);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toBe(`dssync: document ${id} not found in data source ${ds.id}\n`);
  });

  it('lists the chunks of a document and shows one with its text', { timeout: 180_000 }, async () => {
    const ds = await okJson('datasources', 'create', '--name', 'Chunks', '--connector', 'conn-1');
    const [doc] = await okJson<Rec[]>('documents', 'upload', ds.id, join(dir, 'alpha.txt'));
    const [chunks, table] = await Promise.all([
      okJson<Rec[]>('chunks', 'list', ds.id, doc!.id),
      ok('chunks', 'list', ds.id, doc!.id),
    ]);
    expect(chunks.length).toBeGreaterThan(0);
    chunks.forEach(expectRecord);
    expect(chunks.map((c) => c.text).join(' ')).toContain('quick brown fox');
    expect(table.stdout.split('\n')[0]).toMatch(/^ID +INDEX +TEXT$/);
    expect(table.stdout).toContain(chunks[0]!.id);

    const first = chunks[0]!;
    const [one, oneHuman] = await Promise.all([okJson('chunks', 'get', doc!.id, first.id), ok('chunks', 'get', doc!.id, first.id)]);
    expectRecord(one);
    expect(one).toMatchObject({ id: first.id, text: first.text });
    expect(oneHuman.stdout).toMatch(new RegExp(`^id: +${first.id}$`, 'm'));
    expect(oneHuman.stdout).toContain(first.text!.trim());
  });

  it('names the file and the 415 when the service does not read its format (an .rtf sent as it is)', { timeout: 180_000 }, async () => {
    const ds = await okJson('datasources', 'create', '--name', 'Refused', '--connector', 'conn-1');
    await writeFile(join(dir, 'letter.rtf'), '{\\rtf1\\ansi Dear team\\par}');
    const r = await cli('documents', 'upload', ds.id, join(dir, 'letter.rtf'));
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('letter.rtf');
    expect(r.stderr).toContain('415');
    expect(r.stderr).toContain('has type .rtf, which the service does not read');
    expect(await okJson<Rec[]>('documents', 'list', ds.id)).toEqual([]);
  });
});

describe('dssync apps', () => {
  it('lists the data sources enabled for an App', { timeout: 120_000 }, async () => {
    const ds = await okJson('datasources', 'create', '--name', 'ForApp', '--connector', 'app-cli-1');
    const [json, human, none] = await Promise.all([
      okJson<Rec[]>('apps', 'data-sources', 'app-cli-1'),
      ok('apps', 'data-sources', 'app-cli-1'),
      ok('apps', 'data-sources', 'app-without-sources'),
    ]);
    expect(json.map((r) => r.id)).toEqual([ds.id]);
    json.forEach(expectRecord);
    expect(human.stdout).toMatch(new RegExp(`^${ds.id} +ForApp +app-cli-1$`, 'm'));
    expect(none.stdout).toBe('No data sources.\n');
  });
});
