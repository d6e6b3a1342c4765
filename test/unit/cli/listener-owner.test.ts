/**
 * Issue 36.1: which user answers a connection, read from the kernel's socket tables: the
 * server's side of the connection (local = the daemon's address, remote = ours), in
 * /proc/net/tcp (IPv4) or /proc/net/tcp6 (IPv6, and IPv4 mapped into it).
 */
import { describe, expect, it } from 'vitest';
import { uidOf } from '../../../src/cli/listener-owner.js';

const HEAD = '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n';
const tables = (tcp: string, tcp6 = ''): ((f: string) => string) => (f) => (f.endsWith('tcp6') ? HEAD + tcp6 : HEAD + tcp);

describe('uidOf', () => {
  it('finds the server side of a loopback connection, not the client side nor the listener', () => {
    const read = tables(
      [
        '   0: 0100007F:2253 00000000:0000 0A 00000000:00000000 00:00000000 00000000 65534        0 1 1',
        '   1: 0100007F:C122 0100007F:2253 01 00000000:00000000 00:00000000 00000000     0        0 2 1',
        '   2: 0100007F:2253 0100007F:C122 01 00000000:00000000 00:00000000 00000000 65534        0 3 1',
      ].join('\n'),
    );
    expect(uidOf(read, { address: '127.0.0.1', port: 8787 }, { address: '127.0.0.1', port: 0xc122 })).toBe(65534);
    expect(uidOf(read, { address: '127.0.0.1', port: 8787 }, { address: '127.0.0.1', port: 1 })).toBeUndefined();
  });

  it('reads IPv6 (::1) and IPv4 mapped into a tcp6 socket', () => {
    const read = tables(
      '',
      [
        '   0: 00000000000000000000000001000000:2253 00000000000000000000000001000000:D431 01 00000000:00000000 00:00000000 00000000  1000        0 4 1',
        '   1: 0000000000000000FFFF00000100007F:2253 0000000000000000FFFF00000100007F:D432 01 00000000:00000000 00:00000000 00000000   998        0 5 1',
      ].join('\n'),
    );
    expect(uidOf(read, { address: '::1', port: 8787 }, { address: '::1', port: 0xd431 })).toBe(1000);
    expect(uidOf(read, { address: '127.0.0.1', port: 8787 }, { address: '127.0.0.1', port: 0xd432 })).toBe(998);
  });

  it('without the tables (not Linux) the user is unknown', () => {
    expect(uidOf(() => { throw new Error('ENOENT'); }, { address: '127.0.0.1', port: 1 }, { address: '127.0.0.1', port: 2 })).toBeUndefined();
  });
});
