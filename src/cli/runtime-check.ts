/**
 * The oldest Node.js dssync runs on: package.json's `engines` (docs/upgrading.md, "Node.js
 * versions"). The entry file checks it before anything else, so an older one gets one line
 * naming both versions and exit 2 (the environment is a setting), not a load error.
 */
export const OLDEST_NODE = '22.13';

/** The line to print when `version` (process.versions.node) is older than OLDEST_NODE; undefined when it will do. */
export function tooOldNode(version: string): string | undefined {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  const [oldMajor = 0, oldMinor = 0] = OLDEST_NODE.split('.').map(Number);
  if (major > oldMajor || (major === oldMajor && minor >= oldMinor)) return undefined;
  return `dssync: Node.js ${version} is too old: dssync needs ${OLDEST_NODE} or newer (26, the active LTS, recommended; docs/upgrading.md)`;
}
