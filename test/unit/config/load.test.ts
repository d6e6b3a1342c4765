import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config/connection.js';
import { ConfigFileError, loadConfig, loadSettings, requireMappings } from '../../../src/config/load.js';
import { DEFAULTS } from '../../../src/config/schema.js';
import { describeConfig } from '../../../src/config/describe.js';
import { staticToken } from '../../../src/auth/settings.js';

const dir = mkdtempSync(join(tmpdir(), 'dssync-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
function writeConfig(content: unknown): string {
  const file = join(dir, `config-${n++}.json`);
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
  return file;
}

const base = { baseUrl: 'https://svc.example.com', organizationId: 'org-1' };
const mapping = { path: '/srv/share/handbook', dataSourceId: 'ds-1' };

function settingsError(content: unknown): ConfigError {
  const file = writeConfig(content);
  try {
    loadSettings({ file, env: {} });
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error('expected a ConfigError');
}

describe('loadSettings: valid files', () => {
  it('applies every default to a minimal file', () => {
    const file = writeConfig({ ...base, mappings: [mapping] });
    const s = loadSettings({ file, env: { HOME: '/home/op' } });
    expect(s.file).toBe(file);
    expect(s.baseUrl).toBe('https://svc.example.com');
    expect(s.statePath).toBe('/home/op/.local/state/dssync/state.json');
    expect(s.logLevel).toBe('info');
    expect(s.queue).toEqual({
      concurrency: 32,
      requestsPerSecond: 0,
      maxAttempts: 6,
      uploadBatchFiles: 20,
      uploadBatchBytes: 32 * 1024 * 1024,
      timeouts: { connectMs: 10000, headersMs: 60000, bodyMs: 300000 },
    });
    expect(s.status.listen).toEqual({ host: '127.0.0.1', port: 8787 });
    expect(s.rescanIntervalSeconds).toBe(3600);
    expect(s.debounceMs).toBe(300);
    expect(s.ingestionCheck).toEqual({ enabled: true, delaySeconds: 120 });
    expect(s.mappings).toEqual([
      {
        id: 'ds:ds-1',
        path: '/srv/share/handbook',
        dataSourceId: 'ds-1',
        include: ['**/*.{txt,md,pdf,docx,html,htm,doc,odt,rtf,csv,tsv,pptx,xlsx,xlsm,ods,odp,epub,eml,msg}'],
        exclude: [],
        ignoreFile: '.dssyncignore',
        maxFileBytes: 20 * 1024 * 1024,
        formats: {},
        urlTemplate: 'file://{absPath}',
        metadata: {},
        prune: 'ours',
        maxDeletePercent: 50,
        followSymlinks: false,
        watch: { mode: 'auto', pollIntervalSeconds: 10, pollBudgetPercent: 5 },
      },
    ]);
  });

  it('derives the id of a mapping named by data source name, and keeps an explicit id', () => {
    const file = writeConfig({
      mappings: [
        { path: '/a', dataSource: { name: 'Policies', llmConnectorIds: ['c1'] } },
        { id: 'hb', path: '/b/', dataSourceId: 'ds-2' },
      ],
    });
    const s = loadSettings({ file, env: {} });
    expect(s.mappings.map((m) => m.id)).toEqual(['name:Policies', 'hb']);
    expect(s.mappings[1]?.path).toBe('/b');
    expect(s.mappings[0]?.dataSource).toEqual({ name: 'Policies', llmConnectorIds: ['c1'] });
  });

  it('returns a deeply frozen object', () => {
    const s = loadSettings({ file: writeConfig({ mappings: [mapping] }), env: {} });
    expect(Object.isFrozen(s)).toBe(true);
    expect(Object.isFrozen(s.queue.timeouts)).toBe(true);
    expect(Object.isFrozen(s.mappings[0]?.include)).toBe(true);
    expect(() => {
      (s.queue as { concurrency: number }).concurrency = 99;
    }).toThrow(TypeError);
  });

  it('needs no file: admin commands run with defaults and no mappings', () => {
    const s = loadSettings({ env: { STATE_DIRECTORY: '/var/lib/dssync' } });
    expect(s.file).toBeUndefined();
    expect(s.mappings).toEqual([]);
    expect(s.statePath).toBe('/var/lib/dssync/state.json');
    expect(() => requireMappings(s)).toThrow(/no folder to mirror: add at least one entry to "mappings"/);
  });

  it('reads the file named by DSSYNC_CONFIG, --config winning over it', () => {
    const a = writeConfig({ appId: 'from-env' });
    const b = writeConfig({ appId: 'from-flag' });
    expect(loadSettings({ env: { DSSYNC_CONFIG: a } }).appId).toBe('from-env');
    expect(loadSettings({ file: b, env: { DSSYNC_CONFIG: a } }).appId).toBe('from-flag');
  });

  it('resolves relative statePath, tokenFile and tls.caFile against the config file folder', () => {
    const s = loadSettings({
      file: writeConfig({ statePath: 'state/s.json', tokenFile: 'token', tls: { caFile: 'ca.pem' } }),
      env: {},
    });
    expect(s.statePath).toBe(join(dir, 'state/s.json'));
    expect(s.fileConnection.tokenFile).toBe(join(dir, 'token'));
    expect(s.tls.caFile).toBe(join(dir, 'ca.pem'));
  });

  it('lets status.listen be turned off, and warns when it is not loopback', () => {
    expect(loadSettings({ file: writeConfig({ status: { listen: false } }), env: {} }).status.listen).toBe(false);
    const warnings: string[] = [];
    const s = loadSettings({ file: writeConfig({ status: { listen: '0.0.0.0:9000' } }), env: {}, warn: (m) => warnings.push(m) });
    expect(s.status.listen).toEqual({ host: '0.0.0.0', port: 9000 });
    expect(warnings.join('\n')).toMatch(/status\.listen is 0\.0\.0\.0:9000: the status endpoint .* reachable from other machines/);
    const v6 = loadSettings({ file: writeConfig({ status: { listen: '[::1]:8080' } }), env: {}, warn: (m) => warnings.push(m) });
    expect(v6.status.listen).toEqual({ host: '::1', port: 8080 });
    expect(warnings).toHaveLength(1);
  });

  it('warns when one mapped folder is inside another', () => {
    const warnings: string[] = [];
    loadSettings({
      file: writeConfig({ mappings: [mapping, { path: '/srv/share/handbook/hr', dataSourceId: 'ds-2' }] }),
      env: {},
      warn: (m) => warnings.push(m),
    });
    expect(warnings).toEqual([expect.stringContaining('mappings[1].path /srv/share/handbook/hr is inside mappings[0].path /srv/share/handbook')]);
  });
});

describe('precedence: flag > environment > file > default', () => {
  const file = () => writeConfig({ ...base, statePath: '/file/state.json', logLevel: 'warn' });
  it('uses the file when nothing overrides it', () => {
    const s = loadSettings({ file: file(), env: {} });
    expect([s.baseUrl, s.organizationId, s.statePath, s.logLevel]).toEqual(['https://svc.example.com', 'org-1', '/file/state.json', 'warn']);
  });
  it('lets the environment override the file', () => {
    const s = loadSettings({
      file: file(),
      env: { DSSYNC_BASE_URL: 'https://env:1', DSSYNC_ORG: 'org-env', DSSYNC_STATE_PATH: '/env/s.json', DSSYNC_LOG_LEVEL: 'DEBUG' },
    });
    expect([s.baseUrl, s.organizationId, s.statePath, s.logLevel]).toEqual(['https://env:1', 'org-env', '/env/s.json', 'debug']);
  });
  it('lets flags override the environment', () => {
    const s = loadSettings({
      file: file(),
      env: { DSSYNC_BASE_URL: 'https://env:1', DSSYNC_ORG: 'org-env', DSSYNC_STATE_PATH: '/env/s.json', DSSYNC_LOG_LEVEL: 'debug' },
      flags: { baseUrl: 'https://flag:2', org: 'org-flag', statePath: 'rel/s.json', logLevel: 'error' },
      cwd: '/work',
    });
    expect([s.baseUrl, s.organizationId, s.statePath, s.logLevel]).toEqual(['https://flag:2', 'org-flag', '/work/rel/s.json', 'error']);
  });
  it('rejects a bad DSSYNC_LOG_LEVEL naming the variable', () => {
    expect(() => loadSettings({ env: { DSSYNC_LOG_LEVEL: 'verbose' } })).toThrow(
      'DSSYNC_LOG_LEVEL "verbose" is not a log level; use one of fatal, error, warn, info, debug, trace, silent',
    );
  });
});

describe('loadConfig: connection and secrets', () => {
  const token = 'tok-SECRET-123';

  it('resolves the token through resolveConnection and never prints it', () => {
    const tokenFile = join(dir, 'token-a');
    writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
    const c = loadConfig({ file: writeConfig({ ...base, tokenFile: 'token-a', mappings: [mapping] }), env: {} });
    expect(staticToken(c.connection)).toBe(token);
    expect(staticToken(c.connection)).toBe(token);
    expect(c.connection.tokenSource).toBe(`tokenFile ${tokenFile}`);
    expect(JSON.stringify(c)).not.toContain(token);
    expect(inspect(c, { depth: 10 })).not.toContain(token);
    expect(JSON.stringify(describeConfig(c))).not.toContain(token);
    expect(describeConfig(c)).toMatchObject({ baseUrl: 'https://svc.example.com', tokenSource: `tokenFile ${tokenFile}` });
  });

  it('takes the token from DSSYNC_TOKEN and DSSYNC_TOKEN_FILE', () => {
    const c = loadConfig({ env: { DSSYNC_TOKEN: token, DSSYNC_BASE_URL: 'https://x', DSSYNC_ORG: 'o' } });
    expect(staticToken(c.connection)).toBe(token);
    expect(JSON.stringify(describeConfig(c))).not.toContain(token);
    const f = join(dir, 'token-b');
    writeFileSync(f, 'other', { mode: 0o600 });
    const d = loadConfig({ env: { DSSYNC_TOKEN: token, DSSYNC_TOKEN_FILE: f, DSSYNC_BASE_URL: 'https://x', DSSYNC_ORG: 'o' } });
    expect(staticToken(d.connection)).toBe('other');
  });

  it('warns when the token file is world-readable', () => {
    const f = join(dir, 'token-c');
    writeFileSync(f, token);
    chmodSync(f, 0o644);
    const warnings: string[] = [];
    loadConfig({ env: { DSSYNC_TOKEN_FILE: f, DSSYNC_BASE_URL: 'https://x', DSSYNC_ORG: 'o' }, warn: (m) => warnings.push(m) });
    expect(warnings.join()).toContain(`chmod 600 ${f}`);
    expect(warnings.join()).not.toContain(token);
  });

  it('reports a missing token as a ConfigError on tokenFile', () => {
    expect(() => loadConfig({ env: { DSSYNC_BASE_URL: 'https://x', DSSYNC_ORG: 'o' } })).toThrow(
      expect.objectContaining({ name: 'ConfigError', field: 'tokenFile' }),
    );
  });
});

describe('bad config files: every error names the file, the field and the fix', () => {
  const cases: [string, unknown, string, string][] = [
    ['a relative mapping path', { mappings: [mapping, { path: 'share', dataSourceId: 'x' }] }, 'mappings[1].path', 'mappings[1].path (line 8, column 15): must be an absolute path, got "share" (e.g. "/srv/share/handbook")'],
    ['a missing mapping path', { mappings: [{ dataSourceId: 'x' }] }, 'mappings[0].path', 'mappings[0].path (line 3, column 5): is required: must be an absolute path (e.g. "/srv/share/handbook")'],
    ['a baseUrl that is no URL', { baseUrl: 'service.example.com' }, 'baseUrl', 'baseUrl (line 2, column 14): must be an http:// or https:// URL without credentials (e.g. "https://service.example.com"), got "service.example.com"'],
    ['a wrong type', { baseUrl: 42 }, 'baseUrl', 'baseUrl (line 2, column 14): must be a URL (e.g. "https://service.example.com"), got 42'],
    ['a misspelt key', { queue: { concurency: 2 } }, 'queue.concurency', 'queue.concurency (line 3, column 5): unknown key; did you mean "concurrency"? (remove it or fix its spelling)'],
    ['an unknown mapping key', { mappings: [{ ...mapping, exlude: ['x'] }] }, 'mappings[0].exlude', 'mappings[0].exlude (line 6, column 7): unknown key; did you mean "exclude"?'],
    ['an unknown key with no near match', { frobnicate: true }, 'frobnicate', 'frobnicate (line 2, column 3): unknown key (remove it or fix its spelling)'],
    ['both dataSourceId and dataSource', { mappings: [{ ...mapping, dataSource: { name: 'n', llmConnectorIds: ['c'] } }] }, 'mappings[0]', 'mappings[0] (line 3, column 5): set either "dataSourceId" (an existing data source) or "dataSource" (found by name or created), not both'],
    ['neither dataSourceId nor dataSource', { mappings: [{ path: '/a' }] }, 'mappings[0]', 'mappings[0] (line 3, column 5): name its data source: "dataSourceId": "ds-123", or "dataSource": { "name": "Handbook", "llmConnectorIds": ["conn-1"] }'],
    ['an empty connector list', { mappings: [{ path: '/a', dataSource: { name: 'n', llmConnectorIds: [] } }] }, 'mappings[0].dataSource.llmConnectorIds', 'mappings[0].dataSource.llmConnectorIds (line 7, column 28): must name at least one connector id, e.g. ["conn-1"], got a list'],
    ['duplicate explicit ids', { mappings: [{ ...mapping, id: 'x' }, { path: '/b', dataSourceId: 'ds-2', id: 'x' }] }, 'mappings[1].id', 'mappings[1].id (line 11, column 13): mapping id "x" is also the id of mappings[0] (/srv/share/handbook); give each mapping a distinct "id"'],
    ['duplicate derived ids', { mappings: [mapping, { path: '/b', dataSourceId: 'ds-1' }] }, 'mappings[1]', 'mappings[1] (line 7, column 5): mapping id "ds:ds-1" (derived from its data source) is also the id of mappings[0] (/srv/share/handbook); give each mapping a distinct "id"'],
    ['a negative number', { queue: { concurrency: -1 } }, 'queue.concurrency', 'queue.concurrency (line 3, column 20): must be a whole number >= 1 (e.g. 32), got -1'],
    ['a fractional count', { queue: { uploadBatchFiles: 2.5 } }, 'queue.uploadBatchFiles', 'must be a whole number >= 1 (e.g. 20), got 2.5'],
    ['negative requests per second', { queue: { requestsPerSecond: -1 } }, 'queue.requestsPerSecond', 'must be a number >= 0 (0: no cap; e.g. 50), got -1'],
    ['a number too large to be finite', '{ "debounceMs": 1e999 }', 'debounceMs', 'debounceMs (line 1, column 17): must be a whole number >= 0 (e.g. 300)'],
    ['a number given as a string', { rescanIntervalSeconds: '3600' }, 'rescanIntervalSeconds', 'must be a whole number >= 0 (e.g. 3600), got "3600"'],
    ['maxDeletePercent above 100', { mappings: [{ ...mapping, maxDeletePercent: 150 }] }, 'mappings[0].maxDeletePercent', 'mappings[0].maxDeletePercent (line 6, column 27): must be a number from 0 to 100, got 150'],
    ['maxDeletePercent below 0', { mappings: [{ ...mapping, maxDeletePercent: -5 }] }, 'mappings[0].maxDeletePercent', 'must be a number from 0 to 100, got -5'],
    ['a format policy that is none', { mappings: [{ ...mapping, formats: { '.pptx': 'markdown' } }] }, 'mappings[0].formats[".pptx"]', 'must be "as-is", "convert" (to Markdown) or "skip"'],
    ['a bad prune value', { mappings: [{ ...mapping, prune: 'none' }] }, 'mappings[0].prune', 'must be "ours" (only what dssync created) or "all", got "none"'],
    ['a bad log level', { logLevel: 'verbose' }, 'logLevel', 'logLevel (line 2, column 15): must be one of "fatal", "error", "warn", "info", "debug", "trace", "silent", got "verbose"'],
    ['a bad listen address', { status: { listen: 'localhost' } }, 'status.listen', 'status.listen (line 3, column 15): "localhost" is not host:port'],
    ['listen: true', { status: { listen: true } }, 'status.listen', 'must be "host:port" (e.g. "127.0.0.1:8787") or false to turn the endpoint off, got true'],
    ['an unknown URL placeholder', { mappings: [{ ...mapping, urlTemplate: 'file://{path}' }] }, 'mappings[0].urlTemplate', 'mappings[0].urlTemplate (line 6, column 22): unknown placeholder {path}; the placeholders are {absPath}, {relPath}, {name}, {mappingId}'],
    ['a URL template that is no URL', { mappings: [{ ...mapping, urlTemplate: '{relPath}' }] }, 'mappings[0].urlTemplate', 'does not produce an absolute URL'],
    ['metadata with an object value', { mappings: [{ ...mapping, metadata: { team: { a: 1 } } }] }, 'mappings[0].metadata.team', 'metadata values must be strings, numbers or booleans'],
    ['an include that is not a list', { mappings: [{ ...mapping, include: '*.pdf' }] }, 'mappings[0].include', 'must be a list of glob patterns, e.g. ["**/*.pdf"], got "*.pdf"'],
    ['an ignoreFile outside the folder', { mappings: [{ ...mapping, ignoreFile: '../x' }] }, 'mappings[0].ignoreFile', 'must be a file name inside the mapped folder (e.g. ".dssyncignore"), got "../x"'],
    ['a top-level array', '[1]', '', 'file (line 1, column 1): the config file must hold a JSON object'],
    ['null mappings', { mappings: null }, 'mappings', 'mappings (line 2, column 15): must be a list of mappings, got null'],
  ];
  it.each(cases)('%s', (_name, content, field, text) => {
    const err = settingsError(content);
    expect(err).toBeInstanceOf(ConfigFileError);
    expect(err.field ?? '').toBe(field);
    expect(err.message).toContain('invalid config file ' + dir);
    expect(err.message).toContain(text);
  });

  it('lists every problem of the file at once, in file order', () => {
    const err = settingsError({
      logLevel: 'x',
      queue: { concurrency: 0 },
      mappings: [{ path: 'rel', dataSourceId: 'd' }, { path: '/b', dataSourceId: 'd' }, { path: '/c' }],
    });
    expect((err as ConfigFileError).issues.map((i) => i.field)).toEqual([
      'logLevel',
      'queue.concurrency',
      'mappings[0].path',
      'mappings[1]',
      'mappings[2]',
    ]);
  });
});

describe('unreadable input', () => {
  it.each([
    ['a trailing comma', '{\n  "baseUrl": "x",\n}', 'line 3, column 1): not valid JSON: a comma must not follow the last member of an object, found "}"'],
    ['a missing value', '{\n  "a": 1,\n  "b": }', 'line 3, column 8): not valid JSON: expected a value'],
    ['single quotes', "{ 'a': 1 }", 'line 1, column 3): not valid JSON: expected a key in double quotes'],
    ['an unclosed object', '{ "a": 1', 'not valid JSON: expected "," or "}" after an object member, found the end of the file'],
    ['an empty file', '', 'not valid JSON: the file is empty'],
    ['a duplicate key', '{ "mappings": [],\n  "mappings": [] }', 'line 2, column 3): not valid JSON: the key "mappings" appears twice in the same object; remove one of them'],
    ['a comment', '{ // note\n}', 'line 1, column 3): not valid JSON'],
  ])('%s', (_name, text, expected) => {
    const err = settingsError(text);
    expect(err.message).toContain(expected);
  });

  it('accepts a byte order mark', () => {
    expect(loadSettings({ file: writeConfig('\uFEFF{ "appId": "a" }'), env: {} }).appId).toBe('a');
  });

  it('reports a missing file with its path and where the name came from', () => {
    const missing = join(dir, 'nope.json');
    expect(() => loadSettings({ file: missing, env: {} })).toThrow(`the config file ${missing} (from --config) does not exist; check the path`);
    expect(() => loadSettings({ env: { DSSYNC_CONFIG: missing } })).toThrow('(from DSSYNC_CONFIG) does not exist');
  });

  it('reports a folder given as the config file', () => {
    expect(() => loadSettings({ file: dir, env: {} })).toThrow(`the config file ${dir} (from --config) is a folder`);
  });

  it('reports an unreadable file with the fix', () => {
    const readFile = (): string => {
      throw Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
    };
    expect(() => loadSettings({ file: '/etc/dssync/config.json', env: {}, readFile })).toThrow(
      'the config file /etc/dssync/config.json (from --config) cannot be read (permission denied, EACCES); make it readable by the user dssync runs as',
    );
  });

  it.skipIf(process.getuid?.() === 0)('reports a file without read permission (skipped as root: root reads any file)', () => {
    const f = writeConfig({});
    chmodSync(f, 0o000);
    expect(() => loadSettings({ file: f, env: {} })).toThrow(/cannot be read \(permission denied, EACCES\)/);
  });
});

describe('the shipped example', () => {
  it('config.example.json loads and states every default', () => {
    const example = join(import.meta.dirname, '../../../config.example.json');
    const s = loadSettings({ file: example, env: {} });
    expect(s.queue).toEqual(DEFAULTS.queue);
    expect(s.logLevel).toBe(DEFAULTS.logLevel);
    expect(s.rescanIntervalSeconds).toBe(DEFAULTS.rescanIntervalSeconds);
    expect(s.debounceMs).toBe(DEFAULTS.debounceMs);
    expect(s.ingestionCheck).toEqual(DEFAULTS.ingestionCheck);
    expect(s.mappings.length).toBeGreaterThanOrEqual(2);
    const first = s.mappings[0];
    expect(first).toMatchObject({
      include: DEFAULTS.mapping.include,
      ignoreFile: DEFAULTS.mapping.ignoreFile,
      maxFileBytes: DEFAULTS.mapping.maxFileBytes,
      urlTemplate: DEFAULTS.mapping.urlTemplate,
      prune: DEFAULTS.mapping.prune,
      maxDeletePercent: DEFAULTS.mapping.maxDeletePercent,
      followSymlinks: DEFAULTS.mapping.followSymlinks,
    });
  });
});

describe('config: watch (issue 12)', () => {
  it('takes the top-level watch for every mapping, overridden key by key per mapping', () => {
    const s = loadSettings({
      file: writeConfig({
        ...base,
        watch: { mode: 'poll', pollIntervalSeconds: 30 },
        mappings: [
          { path: '/srv/a', dataSourceId: 'ds-a' },
          { path: '/srv/b', dataSourceId: 'ds-b', watch: { mode: 'events', pollBudgetPercent: 2 } },
        ],
      }),
      env: {},
    });
    expect(s.mappings[0]!.watch).toEqual({ mode: 'poll', pollIntervalSeconds: 30, pollBudgetPercent: 5 });
    expect(s.mappings[1]!.watch).toEqual({ mode: 'events', pollIntervalSeconds: 30, pollBudgetPercent: 2 });
  });

  it('rejects a wrong mode, budget or key, naming the field and what to write', () => {
    expect(settingsError({ ...base, watch: { mode: 'inotify' }, mappings: [mapping] }).message).toMatch(/watch\.mode[^\n]*"auto"/);
    expect(settingsError({ ...base, mappings: [{ ...mapping, watch: { pollBudgetPercent: 0 } }] }).message).toMatch(/pollBudgetPercent[^\n]*above 0/);
    expect(settingsError({ ...base, watch: { pollEvery: 3 }, mappings: [mapping] }).message).toMatch(/pollEvery/);
  });
});

describe('plain http:// (issue 24.8)', () => {
  const env = { DSSYNC_TOKEN: 'tok-123456', DSSYNC_ORG: 'o' };
  it('is accepted to this machine: 127.0.0.0/8, ::1, localhost', () => {
    for (const url of ['http://127.0.0.1:8080', 'http://127.1.2.3', 'http://[::1]:9', 'http://localhost:1', 'http://api.localhost']) {
      expect(loadConfig({ env: { ...env, DSSYNC_BASE_URL: url } }).connection.baseUrl).toBe(url);
    }
  });
  it('is refused to another host, naming the field, why, and the setting that allows it', () => {
    for (const url of ['http://service.example', 'http://10.0.0.1', 'http://[::2]', 'http://127.0.0.1.example']) {
      expect(() => loadConfig({ env: { ...env, DSSYNC_BASE_URL: url } })).toThrow(/baseUrl http:\/\/.* is plain http:\/\/ to another host: .*clear text.*"allowInsecureHttp": true.*DSSYNC_ALLOW_INSECURE_HTTP=1/);
    }
  });
  it('is accepted to another host when the operator says so: DSSYNC_ALLOW_INSECURE_HTTP=1 or "allowInsecureHttp": true', () => {
    expect(loadConfig({ env: { ...env, DSSYNC_BASE_URL: 'http://service.example', DSSYNC_ALLOW_INSECURE_HTTP: '1' } }).connection.baseUrl).toBe('http://service.example');
    const dir = mkdtempSync(join(tmpdir(), 'dssync-insecure-'));
    const file = join(dir, 'config.json');
    writeFileSync(file, JSON.stringify({ baseUrl: 'http://service.example', allowInsecureHttp: true }));
    expect(loadConfig({ file, env }).connection.baseUrl).toBe('http://service.example');
  });
});


describe('mappings[].formats', () => {
  it('a format set to "skip" is excluded from the mapping; the others are kept as the mapping gave them', () => {
    const s = loadSettings({ file: writeConfig({ mappings: [{ ...mapping, exclude: ['**/tmp/**'], formats: { '.eml': 'skip', '.csv': 'as-is' } }] }), env: {} });
    expect(s.mappings[0]?.exclude).toEqual(['**/tmp/**', '**/*.eml']);
    expect(s.mappings[0]?.formats).toEqual({ '.eml': 'skip', '.csv': 'as-is' });
  });
});
