// Make the CLI entry point executable so `npx dssync` and the systemd units can run it directly.
import { chmodSync, existsSync } from 'node:fs';

const bin = new URL('../dist/src/cli/main.js', import.meta.url);
if (existsSync(bin)) chmodSync(bin, 0o755);
