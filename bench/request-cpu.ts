/**
 * The client's CPU per request, alone (docs/performance.md, "CPU per request"): the
 * emulator runs in a child process, this process holds only the client (api/client.ts,
 * with a static token), so its CPU is the requests' and nothing else's:
 *
 *   node dist/bench/request-cpu.js [FILES] [ROUNDS]
 *
 * Uploads FILES small files (1–16 KiB) in batches of 20, then sends ROUNDS metadata PUTs
 * per document, 16 requests at once (the default concurrency). Prints one JSON line: CPU
 * (ms, user + system of this process) per uploaded file and per PUT, the PUT's user and
 * system parts. Add `--cpu-prof` to node's options for a profile of the client alone.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { UploadFile } from '../src/api/records.js';
import { DatastoreClient } from '../src/api/client.js';
import { StaticTokenProvider } from '../src/auth/static.js';
import { DEFAULT_ORGANIZATION_HEADER } from '../src/config/connection.js';
import { runAlone } from './lib/alone.js';
import { ORG, TOKEN } from './lib/dssync.js';
import { startService } from './lib/service.js';

const BATCH = 20;
const CONCURRENCY = 16;

/** The child: the emulator, until its parent says stop. */
async function serve(): Promise<void> {
  const emu = await startService();
  process.send?.({ url: emu.url });
  await new Promise((resolve) => process.once('message', resolve));
  await emu.close();
}

async function pool(n: number, f: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < n) await f(next++);
  }));
}

const cpuMs = (u: NodeJS.CpuUsage): number => (u.user + u.system) / 1000;

async function measure(files: number, rounds: number): Promise<void> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['serve'], { stdio: 'inherit' });
  const dir = mkdtempSync(join(tmpdir(), 'dssync-request-cpu-'));
  try {
    const { url } = await new Promise<{ url: string }>((resolve) => child.once('message', (m) => resolve(m as { url: string })));
    const api = new DatastoreClient({
      baseUrl: url,
      organizationId: ORG,
      organizationHeader: DEFAULT_ORGANIZATION_HEADER,
      tokens: new StaticTokenProvider({ describe: 'bench', read: () => TOKEN }),
      requestsPerSecond: 0,
      concurrency: CONCURRENCY,
      maxAttempts: 3,
      timeouts: { connectMs: 10_000, headersMs: 30_000, bodyMs: 60_000 },
    });
    const ds = await api.createDataSource({ name: 'Bench', llmConnectorIds: ['bench'] });
    const upload: UploadFile[] = Array.from({ length: files }, (_, i) => {
      const path = join(dir, `f${i}.txt`);
      const data = Buffer.alloc(1024 * (1 + (i % 16)), 97 + (i % 26));
      writeFileSync(path, data);
      return {
        path,
        name: `d${i % 40}/f${i}.txt`,
        expectedSize: data.length,
        expectedSha256: createHash('sha256').update(data).digest('hex'),
        open: async () => {
          const handle = await open(path, 'r');
          return { path, handle, stat: await handle.stat() };
        },
      };
    });
    const ids: string[] = [];
    const sendBatch = async (b: number): Promise<void> => {
      for (const d of await api.uploadDocuments(ds.id, upload.slice(BATCH * b, BATCH * (b + 1)))) ids.push(d.id);
    };
    await sendBatch(0); // connections opened, code compiled
    let t = process.cpuUsage();
    await pool(Math.ceil(files / BATCH) - 1, (b) => sendBatch(b + 1));
    const uploadMs = cpuMs(process.cpuUsage(t));
    t = process.cpuUsage();
    await pool(ids.length * rounds, async (k) => {
      const i = k % ids.length;
      const path = `d/f${i}.txt`;
      await api.updateDocument(ds.id, ids[i]!, { name: path, url: `file:///srv/share/${path}`, metadata: { dssync_path: path, dssync_sha256: 'ab'.repeat(32), dssync_size: 4096 } });
    });
    const put = process.cpuUsage(t);
    const puts = ids.length * rounds;
    await api.close();
    const round = (ms: number): number => Math.round(ms * 1000) / 1000;
    process.stdout.write(
      `${JSON.stringify({ files, puts, uploadCpuMsPerFile: round(uploadMs / (files - BATCH)), putCpuMs: round(cpuMs(put) / puts), putUserMs: round(put.user / 1000 / puts), putSystemMs: round(put.system / 1000 / puts) })}\n`,
    );
  } finally {
    child.send('stop');
    rmSync(dir, { recursive: true, force: true });
  }
}

runAlone(() => (process.argv[2] === 'serve' ? serve() : measure(Number(process.argv[2] ?? 2000), Number(process.argv[3] ?? 1))));
