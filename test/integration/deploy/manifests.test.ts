/**
 * What can be checked of deploy/ without a cluster or a container runtime (docs/deploy.md
 * says what was and was not tested): the Kubernetes manifests parse as YAML (with Python's
 * yaml module: no YAML parser is among the project's packages; skipped, saying so, where
 * python3 lacks it), hold what the deployment rules ask (one replica, read-only root and
 * share, the state on a claim, the pinned identity from the Secret, /healthz and /readyz probes), and
 * the ConfigMap's config loads with dssync's own loader; the Containerfile says what the
 * image promises (base as a build argument, non-root user, volume, healthcheck, entrypoint).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadSettings } from '../../../src/config/load.js';

const DEPLOY = fileURLToPath(new URL('../../../deploy/', import.meta.url));
const FILES = ['configmap.yaml', 'secret.yaml', 'statefulset.yaml', 'networkpolicy.yaml', 'kustomization.yaml'];

/** Every document of every manifest, as JSON (python3 -c 'import yaml'), or why not. */
function parseManifests(): Record<string, unknown>[] | string {
  const script = `import json, sys, yaml
out = []
for f in sys.argv[1:]:
    out.extend(d for d in yaml.safe_load_all(open(f)) if d is not None)
print(json.dumps(out))`;
  const r = spawnSync('python3', ['-c', script, ...FILES.map((f) => `${DEPLOY}kubernetes/${f}`)], { encoding: 'utf8' });
  if (r.error || /No module named/.test(r.stderr)) return `no YAML parser here (python3 with its yaml module): ${r.error?.message ?? r.stderr.trim()}`;
  if (r.status !== 0) throw new Error(`a manifest does not parse as YAML:\n${r.stderr}`);
  return JSON.parse(r.stdout) as Record<string, unknown>[];
}

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('deploy/kubernetes', () => {
  const docs = parseManifests();

  it('parses, and the StatefulSet runs one daemon as the deployment rules say', (ctx) => {
    if (typeof docs === 'string') return ctx.skip(docs);
    expect(docs.map((d) => d['kind']).sort()).toEqual(['ConfigMap', 'Kustomization', 'NetworkPolicy', 'Secret', 'Service', 'StatefulSet']);
    const sts = docs.find((d) => d['kind'] === 'StatefulSet') as Obj;
    expect(sts.spec.replicas).toBe(1);
    const pod = sts.spec.template.spec;
    const c = pod.containers[0];
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001, fsGroup: 10001 });
    expect(c.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(20);
    for (const probe of ['startupProbe', 'livenessProbe']) expect(c[probe].httpGet.path).toBe('/healthz');
    // Ready only while it mirrors: a standby replica (another holds the lease) is not.
    expect(c.readinessProbe.httpGet.path).toBe('/readyz');
    const mounts = Object.fromEntries((c.volumeMounts as Obj[]).map((m) => [m['name'], m]));
    expect(mounts['share']).toMatchObject({ readOnly: true });
    expect(mounts['config']).toMatchObject({ mountPath: '/etc/dssync', readOnly: true });
    expect(mounts['state']?.mountPath).toBe('/var/lib/dssync');
    expect(sts.spec.volumeClaimTemplates[0].metadata.name).toBe('state');
    const pin = (c.env as Obj[]).find((e) => e['name'] === 'DSSYNC_INSTALLATION_ID');
    expect(pin?.valueFrom.secretKeyRef.key).toBe('installation-id');
    // The heap is set from the memory limit (75 %), and the limit holds the first mirror of a
    // million files (peak RSS 1.33 GB, docs/performance.md) with room (issue 37.5).
    const limitMi = Number(/^(\d+)Mi$/.exec(c.resources.limits.memory)?.[1]);
    expect(limitMi * 1.048576).toBeGreaterThan(1.33 * 1000 * 1.25);
    const heap = Number(/--max-old-space-size=(\d+)/.exec((c.env as Obj[]).find((e) => e['name'] === 'NODE_OPTIONS')?.value ?? '')?.[1]);
    expect(heap).toBe(Math.floor(limitMi * 0.75));
    // A hostPath share pins the pod to the node that holds it.
    const share = (pod.volumes as Obj[]).find((v) => v['name'] === 'share');
    if (share?.hostPath) expect(pod.nodeSelector?.['kubernetes.io/hostname']).toBeDefined();
    const secret = docs.find((d) => d['kind'] === 'Secret') as Obj;
    expect(Object.keys(secret.stringData).sort()).toEqual(['dssync-token', 'installation-id', 'status-token']);
  });

  it('the NetworkPolicy lets the pod out to DNS and HTTPS on public addresses only (issue 36.6)', (ctx) => {
    if (typeof docs === 'string') return ctx.skip(docs);
    const np = docs.find((d) => d['kind'] === 'NetworkPolicy') as Obj;
    expect(np.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    const ports = (np.spec.egress as Obj[]).map((r) => (r['ports'] as Obj[]).map((p) => `${p['protocol']}/${p['port']}`).join(','));
    expect(ports).toEqual(['UDP/53,TCP/53', 'TCP/443']);
    const https = (np.spec.egress as Obj[])[1]!['to'][0].ipBlock;
    expect(https.except).toEqual(expect.arrayContaining(['10.0.0.0/8', '169.254.0.0/16']));
  });

  it("the ConfigMap's config loads with dssync's loader (state on the volume, status token from the Secret)", (ctx) => {
    if (typeof docs === 'string') return ctx.skip(docs);
    const cm = docs.find((d) => d['kind'] === 'ConfigMap') as Obj;
    const text = cm.data['config.json'] as string;
    const warnings: string[] = [];
    const settings = loadSettings({ file: '/etc/dssync/config.json', env: {}, readFile: () => text, warn: (w) => warnings.push(w) });
    expect(settings.statePath).toBe('/var/lib/dssync/state.json');
    expect(settings.status.tokenFile).toBe('/run/secrets/dssync/status-token');
    expect(settings.mappings.map((m) => m.path)).toEqual(['/srv/share/docs']);
    expect(warnings).toEqual([]);
  });
});

describe('deploy/container/Containerfile', () => {
  const text = readFileSync(`${DEPLOY}container/Containerfile`, 'utf8');
  it('takes its base as a build argument and runs dssync run as a non-root user with a healthcheck', () => {
    expect(text).toMatch(/^ARG BASE=node:26-bookworm-slim$/m);
    expect(text).toMatch(/^FROM \$\{BASE\}$/m);
    expect(text).toMatch(/^USER 10001:10001$/m);
    expect(text).toMatch(/^VOLUME \["\/var\/lib\/dssync"\]$/m);
    expect(text).toMatch(/^HEALTHCHECK .*\n.*\/healthz/m);
    expect(text).toMatch(/^ENTRYPOINT \["dssync", "run", "--config", "\/etc\/dssync\/config.json"\]$/m);
  });
});
