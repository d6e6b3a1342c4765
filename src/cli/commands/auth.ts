/**
 * `dssync auth status | login` (DESIGN §6, second wave). `status` says which provider is
 * used, whether it works (a token is obtained and the service accepts it) and when the
 * token expires, never the token. `login` is for accounts that need a one-time code: it
 * asks for the username, password and code, asks for offline_access, and stores the
 * refresh token 0600 beside the state file, from which `"grantType": "refresh_token"`
 * then renews.
 */
import { scrub } from '../../secrets.js';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Argv, CommandModule } from 'yargs';
import { configFromArgs, oneShotReach } from '../context.js';
import { CliError, usageError } from '../exit.js';
import { commandGroup, type GlobalArgs } from '../options.js';
import { prompter } from '../prompter.js';

type StatusArgs = GlobalArgs;

async function authStatus(args: StatusArgs): Promise<void> {
  const warn = (m: string): void => void process.stderr.write(`dssync: warning: ${m}\n`);
  const config = configFromArgs(args, process.env, warn);
  const { createClientFromConfig } = await import('../../compose/client.js');
  const api = createClientFromConfig({ ...config, queue: { ...config.queue, maxAttempts: 2 } }, oneShotReach());
  let error: unknown;
  try {
    await api.listDataSources();
  } catch (e) {
    error = e;
  }
  const st = api.tokenStatus();
  await api.close();
  const works = error === undefined;
  const message = error === undefined ? undefined : scrub(error instanceof Error ? error.message : String(error));
  const expires = st.expiresAt === undefined ? undefined : new Date(st.expiresAt).toISOString();
  if (args.json) {
    process.stdout.write(
      `${JSON.stringify({ provider: st.kind, source: st.description, organizationHeader: config.connection.organizationHeader, works, expiresAt: expires ?? null, hasRefreshToken: st.hasRefreshToken ?? false, ...(message ? { error: message } : {}) }, null, 2)}\n`,
    );
  } else {
    const lines = [
      `provider: ${st.kind} (${st.description})`,
      `organization header: ${config.connection.organizationHeader}`,
      `works: ${works ? 'yes (a token was obtained and the service accepted it)' : `no: ${message ?? 'unknown error'}`}`,
      `token expires: ${expires ?? (st.kind === 'static' ? 'not known (a static token)' : 'not said by the token source')}`,
    ];
    if (st.kind === 'oauth2') lines.push(`refresh token held: ${st.hasRefreshToken ? 'yes' : 'no'}`);
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  if (error !== undefined) throw error;
}

interface LoginArgs extends GlobalArgs {
  username?: string;
}

async function authLogin(args: LoginArgs): Promise<void> {
  const warn = (m: string): void => void process.stderr.write(`dssync: warning: ${m}\n`);
  // The password may be missing from the environment here: the person types it.
  const env = { ...process.env, DSSYNC_PASSWORD: process.env.DSSYNC_PASSWORD ?? 'typed-at-login' };
  const config = configFromArgs(args, env, warn);
  const auth = config.connection.auth;
  if (auth.type !== 'oauth2') {
    throw usageError('"dssync auth login" needs "auth": { "type": "oauth2", ... } in the config file (docs/auth.md)');
  }
  const ask = prompter();
  try {
    const username = (args.username ?? (await ask.question(`Username${auth.username ? ` [${auth.username}]` : ''}: `)).trim()) || auth.username || '';
    if (!username) throw usageError('no username given');
    const password = await ask.secret('Password: ');
    const otp = (await ask.question('One-time code (empty if none): ')).trim();
    const [{ OAuth2TokenProvider, storeRefreshToken }, { createAgent }] = await Promise.all([import('../../auth/oauth2.js'), import('../../api/http.js')]);
    const agent = createAgent({ connections: 1, timeouts: config.queue.timeouts });
    try {
      const provider = new OAuth2TokenProvider(auth, { dispatcher: agent });
      const got = await provider.login(username, password, otp || undefined);
      if (got.refreshToken === undefined) {
        throw new CliError(`${auth.tokenUrl} gave no refresh token (offline_access was asked for); the account cannot renew on its own`);
      }
      mkdirSync(dirname(auth.refreshTokenFile), { recursive: true, mode: 0o700 });
      storeRefreshToken(auth.refreshTokenFile, got.refreshToken);
      process.stdout.write(
        `logged in as ${username}; refresh token stored in ${auth.refreshTokenFile} (mode 600)` +
          (auth.grantType === 'refresh_token' ? '\n' : `\nset "grantType": "refresh_token" in "auth" for dssync to renew from it\n`),
      );
    } finally {
      await agent.close();
    }
  } finally {
    ask.close();
  }
}

const statusCommand: CommandModule<GlobalArgs, StatusArgs> = {
  command: 'status',
  describe: 'Which credentials are used, whether they work and when the token expires (never the token)',
  builder: (y: Argv<GlobalArgs>) => y.example('$0 auth status --config /etc/dssync/config.json', 'Check the credentials against the service') as Argv<StatusArgs>,
  handler: (args) => authStatus(args),
};

const loginCommand: CommandModule<GlobalArgs, LoginArgs> = {
  command: 'login',
  describe: 'Log in with a password and a one-time code; stores a refresh token beside the state (oauth2)',
  builder: (y: Argv<GlobalArgs>) =>
    y
      .option('username', { type: 'string', describe: 'The account (default: asked, or "auth.username")' })
      .example('$0 auth login --config /etc/dssync/config.json', 'Asks username, password and one-time code') as unknown as Argv<LoginArgs>,
  handler: (args) => authLogin(args),
};

export const authCommand = commandGroup('auth', 'Credentials: status, login', (y) =>
  y.command(statusCommand).command(loginCommand).demandCommand(1, 'name a subcommand: status or login'),
);
