/**
 * Issue 25.2, the pure part: once the source refused the credentials (a wrong password:
 * invalid_grant), it is asked again at most once every 5 minutes, whoever asks (every
 * mapping's pass, a 401 of the service), so that an identity provider does not lock the
 * account; a corrected password is picked up at that pace. Driven by the fake clock.
 */
import { describe, expect, it } from 'vitest';
import { CredentialsRefusedError, RenewingProvider, type ObtainedToken } from '../../../src/auth/renewing.js';
import { FakeClock } from '../../helpers/fake-clock.js';

/** The pace the docs promise (docs/auth.md), written here rather than imported from the code. */
const REFUSED_RETRY_MS = 5 * 60_000;

/** A grant whose answer the test sets: refused until `allow` is true. */
class Grant extends RenewingProvider {
  readonly kind = 'oauth2' as const;
  readonly description = 'the token endpoint https://idp.example/token (password grant, account dev-user)';
  calls = 0;
  allow = false;

  protected obtain(): Promise<ObtainedToken> {
    this.calls++;
    if (!this.allow) return Promise.reject(new CredentialsRefusedError('credentials refused: invalid_grant: Invalid user credentials (HTTP 401)', { advice: 'Check "auth.username" and the password.' }));
    return Promise.resolve({ accessToken: `access-token-${this.calls}`, expiresIn: 300 });
  }

  protected scrub(message: string): string {
    return message;
  }
}

describe('refused credentials are asked again at a slow pace', () => {
  it('one grant per 5 minutes, however often tokens are asked for', async () => {
    const clock = new FakeClock(1_000_000);
    const p = new Grant({ clock, random: () => 0.5 });
    await expect(p.token()).rejects.toBeInstanceOf(CredentialsRefusedError);
    expect(p.calls).toBe(1);
    // Three mappings retrying every 5 s for almost 5 minutes: no second grant.
    for (let t = 0; t < REFUSED_RETRY_MS - 5_000; t += 5_000) {
      clock.tick(5_000);
      for (let m = 0; m < 3; m++) {
        const err = await p.token().catch((e: unknown) => e);
        expect(err).toBeInstanceOf(CredentialsRefusedError);
        // Still a refusal (exit 3 material), with when it is asked again and the advice.
        expect((err as CredentialsRefusedError).message).toMatch(/not asked again for \d+ s: at most once every 5 minutes/);
        expect((err as CredentialsRefusedError).advice).toContain('auth.username');
      }
    }
    expect(p.calls).toBe(1);
    clock.tick(5_000);
    await expect(p.token()).rejects.toBeInstanceOf(CredentialsRefusedError);
    expect(p.calls).toBe(2);
  });

  it('a 401 of the service does not bypass the pace', async () => {
    const clock = new FakeClock(1_000_000);
    const p = new Grant({ clock });
    await expect(p.token()).rejects.toBeInstanceOf(CredentialsRefusedError);
    clock.tick(60_000);
    await expect(p.renewAfterRejection('an-old-token')).rejects.toBeInstanceOf(CredentialsRefusedError);
    expect(p.calls).toBe(1);
  });

  it('a corrected password is picked up at the next turn', async () => {
    const clock = new FakeClock(1_000_000);
    const p = new Grant({ clock });
    await expect(p.token()).rejects.toBeInstanceOf(CredentialsRefusedError);
    p.allow = true;
    clock.tick(REFUSED_RETRY_MS);
    await expect(p.token()).resolves.toBe('access-token-2');
    expect(p.status().lastError).toBeUndefined();
  });
});
