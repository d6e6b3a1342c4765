/**
 * The Helm chart (deploy/helm/dssync), offline: rendered with test/helpers/helm-template.ts
 * (helm does not install here), each manifest validated against the Kubernetes schemas
 * (kubernetes-models; the prometheus-operator's for ServiceMonitor and PrometheusRule), the
 * config it writes loaded with dssync's own loader, the heap set from the memory limit, a
 * hostPath share pinned to its node, and every metric an alert or a dashboard panel names
 * one that src/daemon/status/metrics.ts exports.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadSettings } from '../../../src/config/load.js';
import { readYamlDocuments, renderChart } from '../../helpers/helm-template.js';

const CHART = fileURLToPath(new URL('../../../deploy/helm/dssync', import.meta.url));
const METRICS_SOURCE = readFileSync(fileURLToPath(new URL('../../../src/daemon/status/metrics.ts', import.meta.url)), 'utf8');
const REQUIRED = { credentials: { token: 'service-token', statusToken: 'status-token' }, installationId: 'share1-prod' };

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function render(overrides: Record<string, unknown> = {}): Obj[] {
  const files = renderChart(CHART, { ...REQUIRED, ...overrides }, { Name: 'share1', Namespace: 'dssync' });
  return [...files.values()].flatMap((text) => readYamlDocuments(text)) as Obj[];
}

const MODELS: Record<string, string> = {
  v1: 'kubernetes-models/v1',
  'apps/v1': 'kubernetes-models/apps/v1',
  'monitoring.coreos.com/v1': '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1',
};

/** Throws the schema's complaint, naming the object, when a manifest is not valid. */
async function validate(doc: Obj): Promise<void> {
  const module = MODELS[doc['apiVersion'] as string];
  if (!module) throw new Error(`no schema for apiVersion ${String(doc['apiVersion'])}`);
  const Model = ((await import(module)) as Record<string, new (d: Obj) => { validate(): void }>)[doc['kind'] as string];
  if (!Model) throw new Error(`no schema for ${String(doc['kind'])}`);
  try {
    new Model(doc).validate();
  } catch (e) {
    throw new Error(`${String(doc['kind'])} ${String(doc['metadata']?.name)}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
}

const of = (docs: Obj[], kind: string, name?: string): Obj => {
  const d = docs.find((x) => x['kind'] === kind && (name === undefined || x['metadata']?.name === name));
  if (!d) throw new Error(`no ${kind} ${name ?? ''} rendered`);
  return d;
};

describe('deploy/helm/dssync', () => {
  it('renders manifests that the Kubernetes and prometheus-operator schemas accept', async () => {
    const docs = render();
    expect(docs.map((d) => d['kind']).sort()).toEqual(['ConfigMap', 'ConfigMap', 'PrometheusRule', 'Secret', 'Service', 'ServiceMonitor', 'StatefulSet']);
    for (const d of docs) await validate(d);
    // The schema check has teeth: a port as a name where a number is due is refused.
    const broken = structuredClone(of(docs, 'StatefulSet'));
    broken.spec.template.spec.containers[0].ports[0].containerPort = 'status';
    await expect(validate(broken)).rejects.toThrow(/containerPort must be integer/);
  });

  it("one replica; the config loads with dssync's loader, its state on the volume and its status port the chart's", () => {
    const docs = render({ status: { port: 9100 } });
    const sts = of(docs, 'StatefulSet');
    expect(sts.spec.replicas).toBe(1);
    const c = sts.spec.template.spec.containers[0];
    const text = of(docs, 'ConfigMap', 'share1').data['config.json'] as string;
    const settings = loadSettings({ file: '/etc/dssync/config.json', env: {}, readFile: () => text });
    expect(settings.statePath).toBe('/var/lib/dssync/state.json');
    expect((c.volumeMounts as Obj[]).find((m) => m['name'] === 'state')?.mountPath).toBe('/var/lib/dssync');
    expect(settings.status.listen).toMatchObject({ port: 9100 });
    expect(c.ports[0].containerPort).toBe(9100);
    expect(settings.mappings.map((m) => m.id)).toEqual(['share1-docs']);
    expect(c.livenessProbe.httpGet.path).toBe('/healthz');
    expect(c.readinessProbe.httpGet.path).toBe('/readyz');
    expect((c.env as Obj[]).find((e) => e['name'] === 'DSSYNC_INSTALLATION_ID')?.valueFrom.secretKeyRef).toEqual({ name: 'share1', key: 'installation-id' });
    expect(of(docs, 'Secret').stringData).toEqual({ 'dssync-token': 'service-token', 'status-token': 'status-token', 'installation-id': 'share1-prod' });
  });

  it.each([
    [2048, 75, 1536],
    [512, 75, 384],
    [3072, 80, 2457],
  ])('memory limit %i Mi, heap at %i percent of it: --max-old-space-size=%i', (limit, percent, heap) => {
    const c = of(render({ memoryLimitMi: limit, heapPercent: percent }), 'StatefulSet').spec.template.spec.containers[0];
    expect(c.resources.limits.memory).toBe(`${limit}Mi`);
    expect((c.env as Obj[]).find((e) => e['name'] === 'NODE_OPTIONS')?.value).toBe(`--max-old-space-size=${heap}`);
  });

  it('the default fits the first mirror of a million files (peak RSS 1.33 GB) with a quarter to spare', () => {
    const c = of(render(), 'StatefulSet').spec.template.spec.containers[0];
    expect(Number.parseInt(c.resources.limits.memory, 10) * 1.048576).toBeGreaterThan(1330 * 1.25);
  });

  it('a hostPath share pins the pod to its node; an NFS volume does not', async () => {
    const pinned = of(render(), 'StatefulSet').spec.template.spec;
    expect(pinned.nodeSelector).toEqual({ 'kubernetes.io/hostname': 'files1' });
    expect(() => render({ share: { nodeName: '' } })).toThrow(/share.nodeName is required with a hostPath share/);
    const nfs = render({ share: { volume: { hostPath: null, nfs: { server: 'files1.example.com', path: '/export/share', readOnly: true } } } });
    const pod = of(nfs, 'StatefulSet').spec.template.spec;
    expect(pod.nodeSelector).toBeUndefined();
    expect((pod.volumes as Obj[]).find((v) => v['name'] === 'share')).toEqual({ name: 'share', nfs: { server: 'files1.example.com', path: '/export/share', readOnly: true } });
    for (const d of nfs) await validate(d);
  });

  it('an existing Secret is used as it is; without one the credentials and the installation id are required', () => {
    const docs = render({ credentials: { existingSecret: 'dssync-creds', token: '', statusToken: '' }, installationId: '' });
    expect(docs.some((d) => d['kind'] === 'Secret')).toBe(false);
    const pod = of(docs, 'StatefulSet').spec.template.spec;
    expect((pod.volumes as Obj[]).find((v) => v['name'] === 'secrets')?.secret.secretName).toBe('dssync-creds');
    expect(() => render({ installationId: '' })).toThrow(/installationId is required/);
    expect(() => render({ credentials: { token: '' } })).toThrow(/credentials.token/);
  });

  it('every metric an alert or a dashboard panel names is one the daemon exports', () => {
    const docs = render();
    const rules = (of(docs, 'PrometheusRule').spec.groups as Obj[]).flatMap((g) => g['rules'] as Obj[]);
    expect(rules.map((r) => r['alert'])).toEqual(['DssyncNoSuccessfulPass', 'DssyncMappingDegraded', 'DssyncProblemsPresent', 'DssyncMappingPausedLong', 'DssyncMassDeletePending', 'DssyncStandbyOrConflict', 'DssyncInotifyOverflow']);
    const dashboard = JSON.parse(of(docs, 'ConfigMap', 'share1-dashboard').data['dssync.json'] as string) as { panels: { targets: { expr: string }[] }[] };
    const exprs = [...rules.map((r) => r['expr'] as string), ...dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr))];
    const named = new Set(exprs.flatMap((e) => e.match(/\bdssync_[a-z_]+/g) ?? []).map((m) => m.replace(/_(bucket|count|sum)$/, '')));
    expect(named.size).toBeGreaterThan(10);
    const missing = [...named].filter((m) => !METRICS_SOURCE.includes(`'${m}'`));
    expect(missing).toEqual([]);
    // The alerts' thresholds come from the values.
    const stale = rules.find((r) => r['alert'] === 'DssyncNoSuccessfulPass')!;
    expect(stale['expr']).toBe('time() - dssync_last_successful_pass_timestamp_seconds{service="share1"} > 10800');
    expect(rules.find((r) => r['alert'] === 'DssyncMassDeletePending')!['annotations'].summary).toContain('{{ $labels.mapping }}');
  });
});
