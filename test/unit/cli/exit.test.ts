import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../src/api/errors.js';
import { ConfigError } from '../../../src/config/connection.js';
import { describeFailure, ExitCode, usageError } from '../../../src/cli/exit.js';

describe('exit codes of failures', () => {
  it('a configuration error is a usage error (2) with its message', () => {
    expect(describeFailure(new ConfigError('no organization id: set --org', 'organizationId'))).toEqual({
      exitCode: ExitCode.USAGE,
      message: 'no organization id: set --org',
    });
    expect(describeFailure(usageError('bad')).exitCode).toBe(ExitCode.USAGE);
  });

  it('refused credentials exit 3', () => {
    for (const status of [401, 403]) {
      const err = new ApiError({ code: status === 401 ? 'E_UNAUTHORIZED' : 'E_FORBIDDEN', status, message: 'refused' });
      const { exitCode, message } = describeFailure(err);
      expect(exitCode).toBe(ExitCode.AUTH);
      expect(message).toContain(`HTTP ${status}`);
    }
  });

  it('other service failures exit 1 with the status, and say how many attempts were made', () => {
    const bad = new ApiError({ code: 'E_BAD_RESPONSE', status: 200, message: 'expected JSON' });
    expect(describeFailure(bad)).toEqual({ exitCode: ExitCode.FAILURE, message: 'expected JSON (HTTP 200)' });
    const down = new ApiError({ code: 'E_CONNECTION', message: 'connection refused', attempts: 6 });
    expect(describeFailure(down).message).toBe('connection refused (E_CONNECTION, after 6 attempts)');
  });
});
