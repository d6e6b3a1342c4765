/**
 * The naive client the benchmark compares dssync with: what a short script would do. One
 * request at a time; each file is uploaded alone, then its document gets its name, url and
 * metadata (the same fields dssync sends, so both end with the same data source).
 */
import { createHash } from 'node:crypto';
import { openAsBlob } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Agent, FormData, request } from 'undici';
import { ORG, TOKEN } from './dssync.js';

export interface NaiveResult {
  seconds: number;
  files: number;
  requests: number;
}

const HEADERS = { authorization: `Bearer ${TOKEN}`, 'x-service-organization-id': ORG };

export async function naiveMirror(baseUrl: string, root: string, rels: readonly string[]): Promise<NaiveResult> {
  const dispatcher = new Agent({ connections: 1 });
  const t0 = performance.now();
  let requests = 0;
  try {
    const ds = await request(`${baseUrl}/datastore/v1/data-sources`, {
      method: 'POST',
      dispatcher,
      headers: { ...HEADERS, 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'Naive', llm_connector_ids: ['conn-1'] }),
    });
    requests++;
    const dsId = ((await ds.body.json()) as { data_source_id: string }).data_source_id;
    for (const rel of rels) {
      const abs = join(root, rel);
      const st = await stat(abs);
      const sha = createHash('sha256').update(await readFile(abs)).digest('hex');
      const form = new FormData();
      form.append('documents', await openAsBlob(abs), rel);
      const up = await request(`${baseUrl}/datastore/v1/data-sources/${dsId}/documents/upload`, { method: 'POST', dispatcher, headers: HEADERS, body: form });
      requests++;
      if (up.statusCode !== 201) throw new Error(`naive upload of ${rel}: HTTP ${up.statusCode} ${await up.body.text()}`);
      const docId = ((await up.body.json()) as { documents: { document_id: string }[] }).documents[0]!.document_id;
      const upd = await request(`${baseUrl}/datastore/v1/data-sources/${dsId}/documents/${docId}`, {
        method: 'PUT',
        dispatcher,
        headers: { ...HEADERS, 'content-type': 'application/json' },
        body: JSON.stringify({
          name: rel,
          url: `file://${abs}`,
          metadata: {
            dssync_path: rel,
            dssync_sha256: sha,
            dssync_size: String(st.size),
            dssync_mtime: String(Math.round(st.mtimeMs)),
            dssync_mapping: 'naive',
            dssync_version: '1',
          },
        }),
      });
      requests++;
      if (upd.statusCode !== 200) throw new Error(`naive update of ${rel}: HTTP ${upd.statusCode} ${await upd.body.text()}`);
      await upd.body.dump();
    }
  } finally {
    await dispatcher.close();
  }
  return { seconds: (performance.now() - t0) / 1000, files: rels.length, requests };
}
