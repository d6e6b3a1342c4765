/** The error a call or promise fails with, asserted to be of the expected class. */
import { expect } from 'vitest';

export async function rejectionOf<E extends Error>(
  call: Promise<unknown> | (() => unknown),
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- any constructor of E
  type: new (...args: any[]) => E,
): Promise<E> {
  try {
    await (typeof call === 'function' ? call() : call);
  } catch (e) {
    expect(e).toBeInstanceOf(type);
    return e as E;
  }
  throw new Error('expected the call to fail');
}
