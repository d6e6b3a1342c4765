/**
 * The status page's sessions and login codes expire on the monotonic clock (issue 27.4): a
 * wall-clock step (chrony at a VM's boot) neither signs a browser out nor keeps a code alive.
 */
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { AccessPolicy, SESSION_COOKIE } from '../../../../src/daemon/status/web/access.js';
import { FakeClock } from '../../../helpers/fake-clock.js';

const withSession = (id: string): IncomingMessage => ({ headers: { cookie: `${SESSION_COOKIE}=${id}` } }) as unknown as IncomingMessage;

describe('AccessPolicy: expiries on the monotonic clock', () => {
  it('keeps a session across a wall step of a day, and ends it 12 h after on the monotonic clock', () => {
    const clock = new FakeClock(1_000_000);
    const access = new AccessPolicy({ listenHost: '127.0.0.1', actions: false, token: 'secret-token-value', clock });
    const id = access.newSession();
    clock.stepWall(24 * 3600_000);
    expect(access.authorize(withSession(id)).ok).toBe(true);
    clock.stepWall(-48 * 3600_000);
    clock.tick(12 * 3600_000);
    expect(access.authorize(withSession(id)).ok).toBe(false);
  });

  it('keeps a login code good for one minute of the monotonic clock, whatever the wall does', () => {
    const clock = new FakeClock(1_000_000);
    const access = new AccessPolicy({ listenHost: '127.0.0.1', actions: false, token: 'secret-token-value', clock });
    const early = access.newLoginCode();
    clock.stepWall(3600_000);
    expect(access.redeemLoginCode(early)).toBe(true);
    const late = access.newLoginCode();
    clock.stepWall(-7200_000);
    clock.tick(60_000);
    expect(access.redeemLoginCode(late)).toBe(false);
  });
});
