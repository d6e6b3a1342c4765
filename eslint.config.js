// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The layer rules of CONTRIBUTING.md, enforced: each folder lists the folders it must not
 * import from (relative imports only; every import in src/ is relative).
 */
const layers = {
  engine: ['local', 'daemon', 'cli', 'emulator', 'auth'],
  local: ['daemon', 'cli', 'emulator', 'state'],
  api: ['engine', 'local', 'state', 'daemon', 'cli', 'emulator'],
  auth: ['engine', 'local', 'state', 'daemon', 'cli', 'emulator'],
  config: ['api', 'auth', 'engine', 'local', 'state', 'daemon', 'cli', 'emulator'],
  state: ['api', 'auth', 'engine', 'local', 'daemon', 'cli', 'emulator'],
  daemon: ['cli', 'emulator'],
  emulator: ['api', 'auth', 'config', 'engine', 'local', 'state', 'daemon', 'cli'],
  time: ['api', 'auth', 'config', 'engine', 'local', 'state', 'daemon', 'cli', 'emulator'],
};
/**
 * Allowed exceptions. The client's upload streams each file from the descriptor that
 * local/fs.ts opened and checked (the one place that opens files), so api/ may use it.
 */
const exceptions = {
  api: { local: ['!../local/fs.js', '!../local/hash.js'] },
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

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'bench/results/**', 'release/**'] },
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
    files: ['src/daemon/web/**/*.js'],
    languageOptions: {
      sourceType: 'script',
      globals: Object.fromEntries(
        ['window', 'document', 'fetch', 'EventSource', 'location', 'Node', 'getComputedStyle', 'ResizeObserver', 'setInterval', 'uPlot', 'console', 'setTimeout'].map((g) => [g, 'readonly']),
      ),
    },
  },
  ...layerRules,
);
