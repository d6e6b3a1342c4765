/**
 * Issue 27.2: every error class dssync exports has a stable code, no two classes share one,
 * and disposition() — the one classifier — has a decision for each (never "unexpected").
 * A new error class fails here until it has a sample below (and so a code and a decision).
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../src/api/errors.js';
import { CredentialsRefusedError } from '../../src/auth/renewing.js';
import { SecretFileError } from '../../src/auth/secret-file.js';
import { CliError } from '../../src/cli/exit.js';
import { ConfigFileError } from '../../src/config/load.js';
import { DataSourceGoneError, FolderChangedError, FolderUnavailableError, SharedDataSourceError } from '../../src/daemon/mapping/build-mirror.js';
import { DataSourceMissingError } from '../../src/engine/data-source.js';
import { ListingIncompleteError } from '../../src/engine/mirror.js';
import { LocalFileChangedError, LocalFileVanishedError } from '../../src/engine/local-side.js';
import { LeaseNotHeldError } from '../../src/daemon/mapping/lease-gate.js';
import { ConfigError } from '../../src/errors/config.js';
import { ERROR_CODES, registryCode } from '../../src/errors/codes.js';
import { disposition } from '../../src/errors/disposition.js';
import { describeFailure } from '../../src/cli/exit.js';
import { IgnoreFileError } from '../../src/local/filters.js';
import { FileAccessError, FileChangedError, FileReadError, FileTooLargeError, FileVanishedError, LocalFileError, NotRegularFileError, OutsideFolderError } from '../../src/local/errors.js';
import { WatchError } from '../../src/local/watch/watcher.js';
import { StateCorruptError, StateFormatRetiredError, StateLockedError, StateReadError, StateVersionError, StateWriteError } from '../../src/state/errors.js';

/**
 * One instance of each class. Families whose code is per instance say so: ApiError (the
 * service's codes), LocalFileError and IgnoreFileError (errno), WatchError (its watch codes).
 */
const samples: Record<string, { error: Error; family?: true }> = {
  ApiError: { error: new ApiError({ code: 'E_SERVER', status: 503, message: 'x' }), family: true },
  CredentialsRefusedError: { error: new CredentialsRefusedError('refused') },
  SecretFileError: { error: new SecretFileError('x', 'tokenFile', 'ENOENT') },
  CliError: { error: new CliError('x') },
  ConfigError: { error: new ConfigError('x') },
  ConfigFileError: { error: new ConfigFileError('/c.json', [{ field: 'baseUrl', message: 'x' } as never]) },
  FolderUnavailableError: { error: new FolderUnavailableError('x') },
  FolderChangedError: { error: new FolderChangedError('x') },
  SharedDataSourceError: { error: new SharedDataSourceError('x') },
  DataSourceMissingError: { error: new DataSourceMissingError('x') },
  DataSourceGoneError: { error: new DataSourceGoneError('x') },
  ListingIncompleteError: { error: new ListingIncompleteError('x') },
  LeaseNotHeldError: { error: new LeaseNotHeldError('x') },
  LocalFileChangedError: { error: new LocalFileChangedError('x') },
  LocalFileVanishedError: { error: new LocalFileVanishedError('x') },
  StateCorruptError: { error: new StateCorruptError('/s', 'x') },
  StateVersionError: { error: new StateVersionError('/s', 9, 4) },
  StateFormatRetiredError: { error: new StateFormatRetiredError('/s') },
  StateLockedError: { error: new StateLockedError('/s.lock', 1, 'h', undefined, 'alive') },
  StateWriteError: { error: new StateWriteError('/s', new Error('x')) },
  StateReadError: { error: new StateReadError('/s', Object.assign(new Error('x'), { code: 'EACCES' })) },
  IgnoreFileError: { error: new IgnoreFileError('/i', 'EACCES', 'x'), family: true },
  WatchError: { error: new WatchError('E_WATCH_ROOT_GONE', '/r', 'x', true), family: true },
  LocalFileError: { error: new LocalFileError('/f', 'EIO', 'x'), family: true },
  FileChangedError: { error: new FileChangedError('/f', 'x'), family: true },
  FileVanishedError: { error: new FileVanishedError('/f'), family: true },
  FileAccessError: { error: new FileAccessError('/f', 'EACCES'), family: true },
  FileReadError: { error: new FileReadError('/f', 'EIO', 'x'), family: true },
  NotRegularFileError: { error: new NotRegularFileError('/f', 'a socket'), family: true },
  OutsideFolderError: { error: new OutsideFolderError('/f', '/r', 'x'), family: true },
  FileTooLargeError: { error: new FileTooLargeError('/f', 9, 1, 'the file'), family: true },
};

/** Every `export class X extends …Error` in src/ (the emulator is its own package). */
function exportedErrorClasses(): string[] {
  const root = join(import.meta.dirname, '../../src');
  const names: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (p.endsWith('.ts')) {
        for (const m of readFileSync(p, 'utf8').matchAll(/^export (?:abstract )?class (\w+) extends \w*Error\b/gm)) {
          if (m[1] !== 'StateError') names.push(m[1]!);
        }
      }
    }
  };
  walk(root);
  return names.sort();
}

describe('error codes (issue 27.2)', () => {
  it('every exported error class has a sample here', () => {
    expect(exportedErrorClasses()).toEqual(Object.keys(samples).sort());
  });

  it('every class has a string code, and no two classes (families aside) share one', () => {
    const byCode = new Map<string, string>();
    for (const [name, { error, family }] of Object.entries(samples)) {
      const code = (error as { code?: unknown }).code;
      expect(typeof code, name).toBe('string');
      expect(error.name === name || name === 'CredentialsRefusedError', `${name}.name`).toBe(true);
      if (family) continue;
      expect(byCode.get(code as string), `${name} shares ${String(code)}`).toBeUndefined();
      byCode.set(code as string, name);
    }
  });

  it('disposition() decides every class, in both scopes (none is "unexpected")', () => {
    for (const [name, { error }] of Object.entries(samples)) {
      for (const scope of ['file', 'mapping'] as const) expect(disposition(error, scope).reason, `${name} (${scope})`).not.toBe('unexpected');
    }
  });

  it('the exit codes where commands disagreed before (issue 27.2), as docs/cli.md "Exit codes" says', () => {
    const exit = (name: string): number => disposition(samples[name]!.error).exitCode;
    expect(exit('FolderUnavailableError')).toBe(2);
    expect(exit('FolderChangedError')).toBe(2);
    expect(exit('StateLockedError')).toBe(1);
    expect(exit('StateVersionError')).toBe(2);
    expect(exit('StateCorruptError')).toBe(2);
    expect(exit('CredentialsRefusedError')).toBe(3);
    expect(exit('SecretFileError')).toBe(2);
    expect(disposition(new CliError('x', 'E_USAGE')).exitCode).toBe(2);
  });

  it('a class is never classified by its name: an error that only borrows one is unexpected', () => {
    const impostor = Object.assign(new Error('x'), { name: 'FolderUnavailableError' });
    expect(disposition(impostor).reason).toBe('unexpected');
  });
});

/** docs/cli.md's table of codes ("Exit codes"): each code (in backquotes) with its exit. */
function documentedExits(): Map<string, number> {
  const text = readFileSync(join(import.meta.dirname, '../../docs/cli.md'), 'utf8');
  const table = text.slice(text.indexOf('| error (class) | code | exit |'));
  const rows = table.slice(0, table.search(/\n\n/)).split('\n').slice(2);
  const exits = new Map<string, number>();
  for (const row of rows) {
    const [, , codes = '', exit = ''] = row.split('|');
    for (const m of codes.matchAll(/`([^`]+)`/g)) {
      expect(exits.has(m[1]!), `${m[1]} documented twice`).toBe(false);
      exits.set(m[1]!, Number(exit.trim()));
    }
  }
  return exits;
}

describe('the registry (errors/codes.ts, issue 38.2)', () => {
  it("docs/cli.md's exit-code table lists every registered code with the registry's exit code, and nothing else", () => {
    const registry = new Map(Object.entries(ERROR_CODES).map(([code, entry]) => [code, entry.exit as number]));
    expect(Object.fromEntries(documentedExits())).toEqual(Object.fromEntries(registry));
  });

  it('every registered code gives its exit code through the one error path of the commands (describeFailure)', () => {
    for (const [code, entry] of Object.entries(ERROR_CODES)) {
      expect(describeFailure(Object.assign(new Error(code), { code })).exitCode, code).toBe(entry.exit);
      expect(disposition({ code }).reason, code).not.toBe(code === 'E_UNEXPECTED' ? '' : 'unexpected');
    }
  });

  it('every registered code is E_* (issue 38.2)', () => {
    expect(Object.entries(ERROR_CODES).filter(([code]) => !/^E_[A-Z_]+$/.test(code))).toEqual([]);
  });

  it('reads an errno, or a name of before issue 38.2, as its E_* code with the same decision (one table)', () => {
    const renamed: Record<string, string> = {
      EACCES: 'E_LOCAL_ACCESS',
      ENOTDIR: 'E_LOCAL_NOT_A_FILE',
      ENOENT: 'E_LOCAL_FILE_VANISHED',
      EIO: 'E_LOCAL_IO',
      ECHANGED: 'E_LOCAL_FILE_CHANGED',
      ENOTREG: 'E_LOCAL_NOT_REGULAR',
      EOUTSIDE: 'E_LOCAL_OUTSIDE',
      EMFILE: 'E_TOO_MANY_OPEN_FILES',
      'root-gone': 'E_WATCH_ROOT_GONE',
      'queue-overflow': 'E_WATCH_QUEUE_OVERFLOW',
    };
    for (const [old, code] of Object.entries(renamed)) {
      expect(registryCode(old), old).toBe(code);
      expect(disposition({ code: old }), old).toEqual(disposition({ code }));
    }
    expect([registryCode('E_SERVER'), registryCode('EWHATEVER')]).toEqual(['E_SERVER', 'EWHATEVER']);
    expect(new FileAccessError('/f', 'EACCES')).toMatchObject({ code: 'E_LOCAL_ACCESS', errno: 'EACCES' });
    expect(new IgnoreFileError('/i', 'EIO', 'x')).toMatchObject({ code: 'E_LOCAL_IO', errno: 'EIO' });
  });
});
