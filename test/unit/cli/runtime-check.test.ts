import { describe, expect, it } from 'vitest';
import { OLDEST_NODE, tooOldNode } from '../../../src/cli/runtime-check.js';

describe('the oldest Node.js dssync runs on', () => {
  it('is package.json engines', async () => {
    const { readFile } = await import('node:fs/promises');
    const pkg = JSON.parse(await readFile(new URL('../../../package.json', import.meta.url), 'utf8')) as { engines: { node: string } };
    expect(pkg.engines.node).toBe(`>=${OLDEST_NODE}`);
  });

  it.each(['20.20.2', '22.12.0', '18.0.0', '21.7.3'])('refuses %s, naming it and the oldest one it needs', (v) => {
    expect(tooOldNode(v)).toBe(`dssync: Node.js ${v} is too old: dssync needs 22.13 or newer (26, the active LTS, recommended; docs/upgrading.md)`);
  });

  it.each(['22.13.0', '22.20.1', '24.1.0', '26.12.1', '30.0.0'])('accepts %s', (v) => {
    expect(tooOldNode(v)).toBeUndefined();
  });
});
