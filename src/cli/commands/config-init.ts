/**
 * `dssync config init`: writes a config by asking (on a terminal, or line by line from a
 * pipe) for what flags did not give: where to write it, the service's address, the
 * organization and its header, the credentials, and the folders with their data sources.
 * Each answer is checked against the service as it comes (the address answers, the
 * credentials and the organization header are accepted, each data source is found by id or
 * name, or will be created); a typed answer that fails is asked again, a flag's ends the
 * command with the exit code of its error (docs/cli.md, "Exit codes").
 *
 * No secret goes into the config: a typed token, password or client secret goes to a 0600
 * file beside it that the config names; one from the environment stays there.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { Argv, CommandModule } from 'yargs';
import type { DataSourceRecord } from '../../api/records.js';
import { GRANT_TYPES } from '../../auth/settings.js';
import { DEFAULT_ORGANIZATION_HEADER } from '../../config/connection.js';
import { loadConfig } from '../../config/load.js';
import { folderProblem } from '../../local/folder-check.js';
import { registerSecret, scrub } from '../../secrets.js';
import { oneShotReach } from '../context.js';
import { disposition } from '../../errors/disposition.js';
import { describeFailure, ExitCode, usageError } from '../exit.js';
import type { GlobalArgs } from '../options.js';
import { prompter, type Prompter } from '../prompter.js';

const AUTH_TYPES = ['static', 'oauth2', 'command'] as const;

interface InitArgs extends GlobalArgs {
  orgHeader?: string | undefined;
  auth?: (typeof AUTH_TYPES)[number] | undefined;
  tokenUrl?: string | undefined;
  grantType?: (typeof GRANT_TYPES)[number] | undefined;
  clientId?: string | undefined;
  username?: string | undefined;
  scope?: string | undefined;
  passwordFile?: string | undefined;
  clientSecretFile?: string | undefined;
  authCommand?: string | undefined;
  folder?: string[] | undefined;
  connector?: string[] | undefined;
  statePath?: string | undefined;
  statusListen?: string | undefined;
  force: boolean;
}

/** The config being written: the keys of the file (DESIGN §6). */
type Draft = Record<string, unknown>;

/** Secrets typed at the prompt: their environment variable (for the checks) and their file. */
interface TypedSecret {
  env: 'DSSYNC_TOKEN' | 'DSSYNC_PASSWORD' | 'DSSYNC_CLIENT_SECRET';
  value: string;
  file: string;
}

/** An answer, and whether a flag (or the environment) gave it: a flag's failure is not asked again. */
interface Answer {
  value: string;
  given: boolean;
}

export const initCommand: CommandModule<GlobalArgs, InitArgs> = {
  command: 'init',
  describe: 'Write a config: asks (or takes flags) for the service, organization, credentials and folders, checking each against the service',
  builder: (y) =>
    y
      .option('org-header', { type: 'string', describe: `Header carrying the organization id (default ${DEFAULT_ORGANIZATION_HEADER})` })
      .option('auth', { choices: AUTH_TYPES, describe: 'Credential type: static (a token), oauth2 (a token endpoint), command (a program that prints a token)' })
      .option('token-url', { type: 'string', describe: 'oauth2: the token endpoint' })
      .option('grant-type', { choices: GRANT_TYPES, describe: 'oauth2: the grant (default password)' })
      .option('client-id', { type: 'string', describe: 'oauth2: the client id' })
      .option('username', { type: 'string', describe: 'oauth2, password grant: the account' })
      .option('scope', { type: 'string', describe: 'oauth2: the scope (optional)' })
      .option('password-file', { type: 'string', describe: 'oauth2: file holding the password (or DSSYNC_PASSWORD, or typed: then stored 0600 beside the config)' })
      .option('client-secret-file', { type: 'string', describe: 'oauth2: file holding the client secret (or DSSYNC_CLIENT_SECRET, or typed)' })
      .option('auth-command', { type: 'string', describe: 'command: the program and its arguments, separated by spaces, or a JSON array' })
      .option('folder', { type: 'string', array: true, describe: 'PATH[=DATASOURCE]: a folder to mirror and its data source (an id, or a name: found, or created). Repeatable. Default data source: the folder\'s name' })
      .option('connector', { type: 'string', array: true, describe: 'LLM connector ids for the data sources to be created' })
      .option('state-path', { type: 'string', describe: 'The state file (default: the platform\'s, docs/configuration.md)' })
      .option('status-listen', { type: 'string', describe: 'The status endpoint, HOST:PORT (default 127.0.0.1:8787)' })
      .option('force', { type: 'boolean', default: false, describe: 'Overwrite an existing config file (and its secret files)' })
      .example('$0 config init --config /etc/dssync/config.json', 'asks each setting, checking it against the service')
      .example(
        'DSSYNC_TOKEN=… $0 config init --config c.json --base-url https://ds.example.com --org org-1 --auth static --folder /srv/share/handbook=Handbook --connector conn-1',
        'for scripts: nothing asked',
      ) as unknown as Argv<InitArgs>,
  handler: async (args) => {
    process.exitCode = await runConfigInit(args);
  },
};

export async function runConfigInit(args: InitArgs, env: NodeJS.ProcessEnv = process.env, ask: Prompter = prompter()): Promise<number> {
  try {
    return await new Init(args, env, ask).run();
  } finally {
    ask.close();
  }
}

class Init {
  private readonly out = (t: string): void => void process.stdout.write(t);
  private readonly draft: Draft = {};
  private readonly typed: TypedSecret[] = [];
  private target = '';
  private dataSources: DataSourceRecord[] | undefined;

  constructor(
    private readonly args: InitArgs,
    private readonly env: NodeJS.ProcessEnv,
    private readonly ask: Prompter,
  ) {}

  async run(): Promise<number> {
    await this.chooseTarget();
    await this.address();
    await this.organizationAndCredentials();
    await this.folders();
    if (this.args.statePath) this.draft.statePath = resolve(this.args.statePath);
    if (this.args.statusListen) this.draft.status = { listen: this.args.statusListen };
    this.write();
    return ExitCode.OK;
  }

  // ---- the answers ----------------------------------------------------------------------

  /** The flag's value, or the typed answer (the default when empty); a usage error once the input has ended. */
  private async answer(flag: string | undefined, flagName: string, question: string, opts: { default?: string; secret?: boolean; optional?: boolean } = {}): Promise<Answer> {
    if (flag !== undefined && flag.trim() !== '') return { value: flag.trim(), given: true };
    const shown = opts.default !== undefined && opts.default !== '' ? ` [${opts.default}]` : '';
    const typed = (await (opts.secret ? this.ask.secret(`${question}${shown}: `) : this.ask.question(`${question}${shown}: `))).trim();
    if (typed !== '') return { value: typed, given: false };
    if (opts.default !== undefined && (opts.default !== '' || opts.optional)) return { value: opts.default, given: false };
    if (opts.optional) return { value: '', given: false };
    if (this.ask.ended()) throw usageError(`no answer to "${question}" (the input ended): give it with ${flagName}`);
    this.out(`  an answer is needed (or give ${flagName})\n`);
    return this.answer(undefined, flagName, question, opts);
  }

  /** A failed check of an answer: fatal when a flag gave it (or the input ended), else said and asked again. */
  /** Says why an answer failed; a given one (or the input ended) ends the command with the error itself. */
  private failed(a: Answer | undefined, e: unknown, lead = ''): void {
    this.out(`✗ ${lead}${describeFailure(e).message}\n`);
    if (a === undefined || a.given || this.ask.ended()) throw e;
  }

  private ok(message: string): void {
    this.out(`✓ ${message}\n`);
  }

  // ---- the steps ------------------------------------------------------------------------

  private async chooseTarget(): Promise<void> {
    const a = await this.answer(this.args.config ?? this.env.DSSYNC_CONFIG, '--config', 'Write the config to', { default: 'dssync.json' });
    this.target = resolve(a.value);
    if (existsSync(this.target) && !this.args.force) {
      throw usageError(`${this.target} exists: give another --config, or --force to overwrite it`);
    }
  }

  private async address(): Promise<void> {
    for (;;) {
      const a = await this.answer(this.args.baseUrl ?? this.env.DSSYNC_BASE_URL, '--base-url', 'Service address (baseUrl)');
      this.draft.baseUrl = a.value;
      // Any answer of the service (a refusal of this made-up token included) is the service there.
      const e = await this.tryService({ organizationId: 'dssync-config-init' }, { DSSYNC_TOKEN: 'dssync-config-init-probe' });
      if (e === undefined || (typeof (e as { status?: unknown }).status === 'number' && (e as { code?: unknown }).code !== 'E_WRONG_ADDRESS')) {
        this.ok(`${a.value} answers`);
        return;
      }
      this.failed(a, e, `${a.value} (--base-url) cannot be used: `);
    }
  }

  private async organizationAndCredentials(): Promise<void> {
    // After a failure only what it points at is asked again: the credentials (refused), or the organization and its header.
    let org: Answer | undefined;
    let header: Answer | undefined;
    let creds: { given: boolean; skipCheck?: string } | undefined;
    for (;;) {
      if (org === undefined || header === undefined) {
        org = await this.answer(this.args.org ?? this.env.DSSYNC_ORG, '--org', 'Organization id');
        const orgHeader = this.args.orgHeader ?? this.env.DSSYNC_ORG_HEADER ?? (org.given ? DEFAULT_ORGANIZATION_HEADER : undefined);
        header = await this.answer(orgHeader, '--org-header', 'Header carrying it', { default: DEFAULT_ORGANIZATION_HEADER });
        this.draft.organizationId = org.value;
        if (header.value !== DEFAULT_ORGANIZATION_HEADER) this.draft.organizationHeader = header.value;
        else delete this.draft.organizationHeader;
      }
      creds ??= await this.credentials();
      if (creds.skipCheck) {
        this.out(`! ${creds.skipCheck}\n`);
        return;
      }
      const e = await this.tryService({}, {});
      if (e === undefined) {
        this.ok(`the service accepts the credentials for organization ${org.value} (${this.dataSources?.length ?? 0} data sources)`);
        return;
      }
      const refused = disposition(e).exitCode === ExitCode.AUTH;
      this.failed({ value: '', given: refused ? creds.given : org.given && header.given }, e);
      if (refused) {
        creds = undefined;
        this.typed.length = 0;
      } else org = header = undefined;
    }
  }

  private async credentials(): Promise<{ given: boolean; skipCheck?: string }> {
    const type = await this.answer(this.args.auth, '--auth', `Credential type (${AUTH_TYPES.join(', ')})`, { default: 'static' });
    if (!(AUTH_TYPES as readonly string[]).includes(type.value)) {
      this.failed(type, usageError(`--auth must be one of ${AUTH_TYPES.join(', ')} (got "${type.value}")`));
      return this.credentials();
    }
    delete this.draft.tokenFile;
    delete this.draft.auth;
    const dir = dirname(this.target);
    if (type.value === 'static') {
      const file = this.args.tokenFile ?? this.env.DSSYNC_TOKEN_FILE;
      if (file) {
        this.draft.tokenFile = resolve(file);
        return { given: true };
      }
      if (this.env.DSSYNC_TOKEN) {
        this.out('  the token stays in DSSYNC_TOKEN: set it for `dssync run` as well (systemd: a credential, docs/deploy.md)\n');
        return { given: true };
      }
      const token = await this.secret('DSSYNC_TOKEN', '--token-file', 'Token', join(dir, 'token'));
      this.draft.tokenFile = token;
      return { given: false };
    }
    if (type.value === 'command') {
      const cmd = await this.answer(this.args.authCommand, '--auth-command', 'Command that prints a token');
      const command = cmd.value.startsWith('[') ? (JSON.parse(cmd.value) as string[]) : cmd.value.split(/\s+/);
      this.draft.auth = { type: 'command', command };
      return { given: cmd.given };
    }
    const tokenUrl = await this.answer(this.args.tokenUrl, '--token-url', 'Token endpoint (tokenUrl)');
    const grant = await this.answer(this.args.grantType, '--grant-type', `Grant (${GRANT_TYPES.join(', ')})`, { default: 'password' });
    const clientId = await this.answer(this.args.clientId, '--client-id', 'Client id');
    const scope = await this.answer(this.args.scope, '--scope', 'Scope (empty: none)', { optional: true });
    const auth: Record<string, unknown> = { type: 'oauth2', tokenUrl: tokenUrl.value, grantType: grant.value, clientId: clientId.value };
    if (scope.value) auth.scope = scope.value;
    let given = tokenUrl.given && grant.given && clientId.given;
    if (grant.value === 'password') {
      const user = await this.answer(this.args.username, '--username', 'Username');
      auth.username = user.value;
      given &&= user.given;
      if (this.args.passwordFile) auth.passwordFile = resolve(this.args.passwordFile);
      else if (!this.env.DSSYNC_PASSWORD) {
        auth.passwordFile = await this.secret('DSSYNC_PASSWORD', '--password-file', 'Password', join(dir, 'password'));
        given = false;
      }
    }
    if (grant.value === 'client_credentials') {
      if (this.args.clientSecretFile) auth.clientSecretFile = resolve(this.args.clientSecretFile);
      else if (!this.env.DSSYNC_CLIENT_SECRET) {
        auth.clientSecretFile = await this.secret('DSSYNC_CLIENT_SECRET', '--client-secret-file', 'Client secret', join(dir, 'client-secret'));
        given = false;
      }
    }
    this.draft.auth = auth;
    if (grant.value === 'refresh_token') {
      return { given, skipCheck: `the refresh_token grant needs a login first: run dssync auth login --config ${this.target}, then dssync config check (the data sources are not looked up now)` };
    }
    return { given };
  }

  /** A typed secret: kept for the checks, written 0600 to `file` at the end; the config names the file. */
  private async secret(envName: TypedSecret['env'], flagName: string, question: string, file: string): Promise<string> {
    const a = await this.answer(undefined, flagName, `${question} (not shown; stored in ${file}, mode 600)`, { secret: true });
    registerSecret(a.value);
    this.typed.push({ env: envName, value: a.value, file });
    return file;
  }

  private async folders(): Promise<void> {
    const mappings: Record<string, unknown>[] = [];
    const flags = this.args.folder ?? [];
    const used = new Set<string>();
    for (let i = 0; ; i++) {
      const fromFlag = flags[i];
      if (fromFlag === undefined && flags.length > 0) break;
      const q = mappings.length === 0 ? 'Folder to mirror' : 'Another folder to mirror (empty: done)';
      const a = fromFlag !== undefined ? { value: fromFlag, given: true } : await this.answer(undefined, '--folder', q, { optional: mappings.length > 0 });
      if (a.value === '') break;
      const eq = a.value.lastIndexOf('=');
      const path = resolve(eq > 0 ? a.value.slice(0, eq) : a.value);
      const problem = await folderProblem(path);
      if (problem) {
        this.failed(a, usageError(`--folder ${path}: ${problem}`));
        continue;
      }
      const ds = eq > 0 ? { value: a.value.slice(eq + 1), given: true } : a.given ? { value: basename(path), given: true } : await this.answer(undefined, '--folder PATH=DATASOURCE', 'Its data source (an id, or a name)', { default: basename(path) });
      const mapping = await this.dataSourceOf(path, ds);
      if (mapping === undefined) continue;
      const key = JSON.stringify(mapping.dataSourceId ?? (mapping.dataSource as { name: string }).name);
      if (used.has(key)) {
        this.failed(ds, usageError(`--folder ${path}: data source ${key} is already mapped to another folder (two mappings cannot share one)`));
        continue;
      }
      used.add(key);
      mappings.push(mapping);
    }
    this.draft.mappings = mappings;
  }

  private async dataSourceOf(path: string, ds: Answer): Promise<Record<string, unknown> | undefined> {
    const all = this.dataSources ?? [];
    const byId = all.find((d) => d.id === ds.value);
    const byName = all.filter((d) => d.name === ds.value);
    if (byId || byName.length === 1) {
      const found = byId ?? byName[0]!;
      this.ok(`${path} -> data source ${found.id}${found.name ? ` ("${found.name}")` : ''}`);
      return { path, dataSourceId: found.id };
    }
    if (byName.length > 1) {
      this.failed(ds, usageError(`--folder ${path}: ${byName.length} data sources are named "${ds.value}" (${byName.map((d) => d.id).join(', ')}): give one's id`));
      return undefined;
    }
    const connectors = await this.answer(this.args.connector?.join(','), '--connector', `No data source is named "${ds.value}": it will be created. Its LLM connector ids (comma-separated)`);
    const ids = connectors.value.split(',').map((s) => s.trim()).filter(Boolean);
    this.ok(`${path} -> a new data source "${ds.value}" (created by the first sync; connectors ${ids.join(', ')})`);
    return { path, dataSource: { name: ds.value, llmConnectorIds: ids } };
  }

  // ---- the service ----------------------------------------------------------------------

  /**
   * Lists the data sources with the draft (and `patch`), loaded as `config check` loads the
   * file: the error, or undefined (the list is kept for the folders' step).
   */
  private async tryService(patch: Draft, secrets: Record<string, string>): Promise<unknown> {
    const env: NodeJS.ProcessEnv = { ...this.env, ...secrets };
    // The draft alone decides: no connection setting of the environment overrides it.
    for (const k of ['DSSYNC_CONFIG', 'DSSYNC_BASE_URL', 'DSSYNC_ORG', 'DSSYNC_ORG_HEADER']) delete env[k];
    if (this.draft.tokenFile !== undefined) delete env.DSSYNC_TOKEN;
    if (this.draft.tokenFile !== undefined || secrets.DSSYNC_TOKEN) delete env.DSSYNC_TOKEN_FILE;
    for (const s of this.typed) env[s.env] = s.value;
    const text = JSON.stringify({ ...this.draft, ...patch, tokenFile: this.typed.some((s) => s.env === 'DSSYNC_TOKEN') ? undefined : this.draft.tokenFile });
    try {
      const config = loadConfig({ file: this.target, env, flags: {}, readFile: () => text });
      const { createClientFromConfig } = await import('../../compose/client.js');
      const api = createClientFromConfig({ ...config, queue: { ...config.queue, maxAttempts: 2 } }, oneShotReach());
      try {
        this.dataSources = await api.listDataSources();
        return undefined;
      } finally {
        await api.close();
      }
    } catch (e) {
      return e;
    }
  }

  // ---- the file -------------------------------------------------------------------------

  private write(): void {
    mkdirSync(dirname(this.target), { recursive: true });
    for (const s of this.typed) writeFileSync(s.file, `${s.value}\n`, { mode: 0o600, flag: this.args.force ? 'w' : 'wx' });
    // World-readable (it holds no secret): the units' dynamic user must read it (systemd/README.md).
    writeFileSync(this.target, `${JSON.stringify(this.draft, null, 2)}\n`, { mode: 0o644, flag: this.args.force ? 'w' : 'wx' });
    // What every command will load: it must load (a setting this command got wrong is its bug).
    loadConfig({ file: this.target, env: this.env, flags: {} });
    this.out(
      scrub(
        `\nWrote ${this.target}${this.typed.length ? ` and ${this.typed.map((s) => s.file).join(', ')} (mode 600)` : ''}.\nNext:\n` +
          `  dssync config check --config ${this.target}\n  dssync probe --config ${this.target}\n  dssync run --config ${this.target}   (or the systemd unit: docs/deploy.md)\n`,
      ),
    );
  }
}
