/**
 * Issue 36.2 and 36.5: a secret is scrubbed in every form the process puts it on the wire in,
 * and children do not inherit the variables that carry secrets.
 */
import { describe, expect, it } from 'vitest';
import { childEnv, registerBasicCredential, registerSecret, scrub } from '../../src/secrets.js';

describe('scrub: encoded forms', () => {
  it('removes a password form-encoded (+ and %20, upper and lower hex) and percent-encoded', () => {
    registerSecret('Corp pass+w0rd/é!*');
    for (const form of ['Corp+pass%2Bw0rd%2F%C3%A9%21*', 'Corp+pass%2bw0rd%2f%c3%a9%21*', 'Corp%20pass%2Bw0rd%2F%C3%A9!*', 'Corp+pass%2Bw0rd%2F%C3%A9%21%2A', 'Corp%20pass%2bw0rd%2f%c3%a9!*']) {
      expect(scrub(`password=${form}&grant_type=password`)).toBe('password=[redacted]&grant_type=password');
    }
  });

  it('removes the base64 of a Basic credential, raw and form-encoded', () => {
    registerBasicCredential('my client', 'cl!ent sec+ret');
    const raw = Buffer.from('my client:cl!ent sec+ret').toString('base64');
    const encoded = Buffer.from('my+client:cl%21ent+sec%2Bret').toString('base64');
    expect(scrub(`Authorization: Basic ${raw}`)).toBe('Authorization: Basic [redacted]');
    expect(scrub(`Authorization: Basic ${encoded}`)).toBe('Authorization: Basic [redacted]');
    expect(scrub('cl%21ent+sec%2Bret')).toBe('[redacted]');
  });
});

describe('childEnv', () => {
  it('passes everything but DSSYNC_TOKEN, DSSYNC_PASSWORD and DSSYNC_CLIENT_SECRET', () => {
    const env = childEnv({ PATH: '/bin', DSSYNC_TOKEN: 't', DSSYNC_PASSWORD: 'p', DSSYNC_CLIENT_SECRET: 's', DSSYNC_LOG_LEVEL: 'info' });
    expect(env).toEqual({ PATH: '/bin', DSSYNC_LOG_LEVEL: 'info' });
  });
});
