// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The layer rules of CONTRIBUTING.md, enforced: each folder lists the folders it must not
 * import from (relative imports only; every import in src/ is relative).
 */
const layers = {
  engine: ['local', 'daemon', 'cli', 'auth', 'compose'],
  local: ['daemon', 'cli', 'state', 'compose'],
  // The client takes a token provider (api/token-provider.ts) built by compose/: no auth, no config.
  api: ['engine', 'local', 'state', 'daemon', 'cli', 'auth', 'config', 'compose'],
  auth: ['engine', 'local', 'state', 'daemon', 'cli', 'config', 'compose'],
  config: ['api', 'auth', 'engine', 'local', 'state', 'daemon', 'cli', 'compose'],
  state: ['api', 'auth', 'engine', 'local', 'daemon', 'cli', 'compose'],
  // Joins api, auth and config into a client; nothing of the engine, the state or the commands.
  compose: ['engine', 'local', 'state', 'daemon', 'cli'],
  daemon: ['cli'],
  time: ['api', 'auth', 'config', 'engine', 'local', 'state', 'daemon', 'cli', 'compose', 'errors'],
  // Conversion to Markdown stands alone (the upload and the executor ask it): pure readers and a worker.
  convert: ['api', 'auth', 'config', 'engine', 'local', 'state', 'daemon', 'cli', 'compose', 'time', 'errors'],
  // The one disposition decides by codes: it imports nothing, so every layer may ask it.
  errors: ['api', 'auth', 'config', 'engine', 'local', 'state', 'daemon', 'cli', 'compose', 'time'],
};
/** Allowed exceptions. */
const exceptions = {
  // The config file's `auth` key is validated by the schema that lives beside the providers.
  config: { auth: ['!../auth/settings.js'] },
};
const layerRules = Object.entries(layers).map(([folder, banned]) => ({
  files: [`src/${folder}/**/*.ts`],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: banned.map((b) => ({
          group: [`../${b}/*`, `../../${b}/*`, `../${b}.js`, `../../${b}.js`, ...(exceptions[folder]?.[b] ?? [])],
          message: `src/${folder}/ must not import src/${b}/ (CONTRIBUTING.md, "Folders")`,
        })),
      },
    ],
  },
}));

/**
 * The root modules of src/ (the logger, printable text, Unicode names, secrets, test hooks, a
 * check's result) are leaves every folder may import: they import no dssync folder.
 */
const rootFolders = [...Object.keys(layers), 'cli'];
const rootRule = {
  files: ['src/*.ts'],
  rules: {
    'no-restricted-imports': ['error', { patterns: [{ group: rootFolders.map((f) => `./${f}/*`), message: 'a root module of src/ must not import a dssync folder (CONTRIBUTING.md, "Folders")' }] }],
  },
};

/**
 * The two packages (CONTRIBUTING.md, "Packages"). The daemon's src/ reaches the emulator only
 * by a dynamic import in src/cli/emulator-package.ts (type imports are erased, so they are
 * allowed); the emulator imports nothing of the daemon, by path or by name: it stands alone
 * like the real service.
 */
const emulatorMessage = 'the dssync package must not depend on the emulator at run time: load it with loadEmulator() from src/cli/emulator-package.ts (CONTRIBUTING.md, "Packages")';
const standAloneMessage = 'packages/emulator must not import the daemon (CONTRIBUTING.md, "Packages"): it stands alone like the real service';
const packageRules = [
  {
    files: ['src/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            { name: '@dssync/emulator', allowTypeImports: true, message: emulatorMessage },
            { name: 'node:http', allowTypeImports: true, message: 'take node:http from src/node-http.ts: its ES module facade loads Node\'s bundled undici at start' },
            { name: 'undici', allowTypeImports: true, message: 'undici\'s index loads all of undici at start: take its Agent from src/api/undici-agent.ts, anything else by a dynamic import where it is used' },
          ],
          patterns: [{ group: ['**/packages/**'], message: emulatorMessage }],
        },
      ],
    },
  },
  ...[
    ['packages/emulator/src/*.ts', '../**'],
    ['packages/emulator/src/*/**/*.ts', '../../**'],
  ].map(([files, outside]) => ({
    files: [files],
    rules: {
      'no-restricted-imports': ['error', { paths: [{ name: 'dssync', message: standAloneMessage }], patterns: [{ group: [outside, 'dssync/*'], message: standAloneMessage }] }],
    },
  })),
];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'packages/*/dist/**', 'coverage/**', 'bench/results/**', 'release/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: { URL: 'readonly', process: 'readonly', console: 'readonly', Buffer: 'readonly', setTimeout: 'readonly' },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
      eqeqeq: ['error', 'always', { null: 'ignore' }],
    },
  },
  {
    // The status page's script: plain browser JavaScript served as is (no build step).
    files: ['src/daemon/status/web/**/*.js'],
    languageOptions: {
      sourceType: 'script',
      globals: Object.fromEntries(
        ['window', 'document', 'fetch', 'EventSource', 'location', 'Node', 'getComputedStyle', 'ResizeObserver', 'setInterval', 'uPlot', 'console', 'setTimeout'].map((g) => [g, 'readonly']),
      ),
    },
  },
  {
    // No function over 150 lines (issue 38.5): a longer one is split along its steps.
    files: ['src/**/*.ts'],
    rules: { 'max-lines-per-function': ['error', { max: 150, skipBlankLines: true, skipComments: true, IIFEs: true }] },
  },
  ...layerRules,
  rootRule,
  ...packageRules,
);
