// Checks of Leasehold with @kubernetes/client-node 2.x, one per argument.
// Run as `node checks.mjs NAME...` with KUBECONFIG set. Each check prints
// "ok NAME" or "FAIL NAME: why"; the others still run, and the exit status
// is 1 if any failed (js_test.go reports each as a subtest).
import * as k8s from '@kubernetes/client-node';

const NS = 'default';
const kc = new k8s.KubeConfig();
kc.loadFromDefault();
const coord = kc.makeApiClient(k8s.CoordinationV1Api);
const core = kc.makeApiClient(k8s.CoreV1Api);
const leasesPath = `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`;

function fail(msg) { throw new Error(msg); }

// wantStatus awaits p, which must fail with an ApiException of code (and
// the Status reason, when given).
async function wantStatus(p, code, reason) {
  try {
    await p;
  } catch (e) {
    if (e.code !== code) fail(`want HTTP ${code}, got ${e.code}: ${e.message}`);
    const body = typeof e.body === 'string' ? JSON.parse(e.body) : e.body;
    if (reason && body.reason !== reason) fail(`want reason ${reason}, got ${JSON.stringify(body)}`);
    return body;
  }
  fail(`want HTTP ${code}, got success`);
}

const lease = (name, holder) => ({ metadata: { name }, spec: { holderIdentity: holder, leaseDurationSeconds: 15 } });
const patchAs = (type) => k8s.setHeaderOptions('Content-Type', type);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(what, cond, ms = 20000) {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) fail(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

const checks = {
  async lease_crud() {
    const created = await coord.createNamespacedLease({ namespace: NS, body: lease('crud', 'a') });
    await wantStatus(coord.createNamespacedLease({ namespace: NS, body: lease('crud', 'a') }), 409, 'AlreadyExists');
    const got = await coord.readNamespacedLease({ name: 'crud', namespace: NS });
    got.spec.holderIdentity = 'b';
    got.spec.renewTime = new k8s.V1MicroTime(); // six fractional digits, as MicroTime must have
    const renewed = await coord.replaceNamespacedLease({ name: 'crud', namespace: NS, body: got });
    if (renewed.spec.holderIdentity !== 'b' || !renewed.spec.renewTime) fail(`replace: ${JSON.stringify(renewed.spec)}`);
    created.spec.holderIdentity = 'c';
    await wantStatus(coord.replaceNamespacedLease({ name: 'crud', namespace: NS, body: created }), 409, 'Conflict');
    const list = await coord.listNamespacedLease({ namespace: NS, fieldSelector: 'metadata.name=crud' });
    if (list.items.length !== 1 || list.items[0].spec.holderIdentity !== 'b') fail(`list: ${JSON.stringify(list.items)}`);
    await coord.deleteNamespacedLease({ name: 'crud', namespace: NS });
    await wantStatus(coord.readNamespacedLease({ name: 'crud', namespace: NS }), 404, 'NotFound');
  },

  async patches() {
    const name = 'patched';
    await coord.createNamespacedLease({ namespace: NS, body: lease(name, 'a') });
    const patch = (body, type, extra = {}) => coord.patchNamespacedLease({ name, namespace: NS, body, ...extra }, patchAs(type));
    await patch({ spec: { holderIdentity: 'b' } }, k8s.PatchStrategy.StrategicMergePatch);
    await patch({ spec: { leaseDurationSeconds: 30 } }, k8s.PatchStrategy.MergePatch);
    await patch([{ op: 'test', path: '/spec/holderIdentity', value: 'b' },
      { op: 'replace', path: '/spec/holderIdentity', value: 'c' }], k8s.PatchStrategy.JsonPatch);
    // A lost compare-and-swap (failed test) is 422 Invalid.
    await wantStatus(patch([{ op: 'test', path: '/spec/holderIdentity', value: 'b' },
      { op: 'replace', path: '/spec/holderIdentity', value: 'x' }], k8s.PatchStrategy.JsonPatch), 422, 'Invalid');
    const applied = { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, namespace: NS }, spec: { holderIdentity: 'd' } };
    await wantStatus(patch(applied, k8s.PatchStrategy.ServerSideApply, { fieldManager: 'js' }), 409, 'Conflict');
    await patch(applied, k8s.PatchStrategy.ServerSideApply, { fieldManager: 'js', force: true });
    const got = await coord.readNamespacedLease({ name, namespace: NS });
    if (got.spec.holderIdentity !== 'd' || got.spec.leaseDurationSeconds !== 30) fail(`after patches: ${JSON.stringify(got.spec)}`);
  },

  async watch_gone() {
    // Run against a server with a small --watch-cache-window.
    const old = (await coord.createNamespacedLease({ namespace: NS, body: lease('churn', 'a') })).metadata.resourceVersion;
    let l = await coord.readNamespacedLease({ name: 'churn', namespace: NS });
    for (let i = 0; i < 60; i++) {
      l.spec.holderIdentity = `h${i}`;
      l = await coord.replaceNamespacedLease({ name: 'churn', namespace: NS, body: l });
    }
    const events = [];
    let ended = false;
    const req = await new k8s.Watch(kc).watch(leasesPath, { resourceVersion: old },
      (type, obj) => events.push([type, obj]), () => { ended = true; });
    await until('the watch to end', () => ended);
    req.abort();
    if (events.length !== 1 || events[0][0] !== 'ERROR' || events[0][1].code !== 410 || events[0][1].reason !== 'Expired') {
      fail(`want one ERROR 410 Expired event, got ${JSON.stringify(events)}`);
    }
  },

  async informer_renewals() {
    // An informer (list, then watch) sees every renewal while leases are
    // renewed back to back, and every add and delete.
    const names = [0, 1, 2, 3, 4].map((i) => `inf-${i}`);
    const rounds = 20;
    const informer = k8s.makeInformer(kc, leasesPath, () => coord.listNamespacedLease({ namespace: NS }));
    const seen = new Set();
    const added = new Set();
    const deleted = new Set();
    informer.on('add', (o) => added.add(o.metadata.name));
    informer.on('update', (o) => seen.add(o.metadata.resourceVersion));
    informer.on('delete', (o) => deleted.add(o.metadata.name));
    const errors = [];
    let running = true;
    informer.on('error', (e) => { if (running) errors.push(e); });
    await informer.start();
    try {
      const current = {};
      for (const n of names) current[n] = await coord.createNamespacedLease({ namespace: NS, body: lease(n, n) });
      const written = new Set();
      for (let r = 0; r < rounds; r++) {
        for (const n of names) {
          current[n].spec.renewTime = new k8s.V1MicroTime();
          current[n] = await coord.replaceNamespacedLease({ name: n, namespace: NS, body: current[n] });
          written.add(current[n].metadata.resourceVersion);
        }
      }
      for (const n of names) await coord.deleteNamespacedLease({ name: n, namespace: NS });
      await until('every event', () => [...written].every((rv) => seen.has(rv)) && names.every((n) => added.has(n) && deleted.has(n)));
      if (informer.list(NS).some((o) => names.includes(o.metadata.name))) fail('deleted leases still in the informer cache');
      if (errors.length) fail(`informer errors: ${errors}`);
    } finally {
      running = false;
      await informer.stop();
    }
  },

  async nodes() {
    await core.createNode({ body: { metadata: { name: 'js-node', labels: { pool: 'js' } } } });
    const now = new Date();
    await core.patchNodeStatus({ name: 'js-node', body: { status: { conditions: [{
      type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'ready', lastHeartbeatTime: now, lastTransitionTime: now }] } } },
    patchAs(k8s.PatchStrategy.StrategicMergePatch));
    const got = await core.readNodeStatus({ name: 'js-node' });
    if (got.status.conditions.map((c) => `${c.type}=${c.status}`).join() !== 'Ready=True') fail(`status: ${JSON.stringify(got.status)}`);
    got.status.conditions[0].status = 'False';
    const updated = await core.replaceNodeStatus({ name: 'js-node', body: got });
    if (updated.status.conditions[0].status !== 'False') fail('replaceNodeStatus did not change the status');
    const list = await core.listNode({ labelSelector: 'pool=js' });
    if (list.items.map((n) => n.metadata.name).join() !== 'js-node') fail(`list by label: ${list.items.length}`);
    await core.deleteNode({ name: 'js-node' });
  },

  async events() {
    for (const [name, obj, reason] of [['e1', 'web-1', 'Started'], ['e2', 'web-1', 'BackOff'], ['e3', 'web-2', 'Started']]) {
      await core.createNamespacedEvent({ namespace: NS, body: {
        metadata: { name }, reason, message: name, type: 'Normal', count: 1,
        involvedObject: { kind: 'Pod', name: obj, namespace: NS },
        firstTimestamp: new Date(), lastTimestamp: new Date() } });
    }
    // The node lifecycle controller records events about the nodes check's
    // node in this namespace too, at any moment: "!=" is asked among the
    // Pods' events only.
    for (const [selector, want] of [['involvedObject.name=web-1', 'e1,e2'], ['involvedObject.name=web-1,reason=Started', 'e1'], ['involvedObject.kind=Pod,reason!=Started', 'e2']]) {
      const got = (await core.listNamespacedEvent({ namespace: NS, fieldSelector: selector })).items.map((e) => e.metadata.name).sort().join();
      if (got !== want) fail(`${selector}: ${got}, want ${want}`);
    }
  },
};

let failed = false;
for (const name of process.argv.slice(2)) {
  try {
    if (!checks[name]) fail(`no check ${name}`);
    await checks[name]();
    console.log(`ok ${name}`);
  } catch (e) {
    failed = true;
    console.log(`FAIL ${name}: ${e.stack || e}`);
  }
}
process.exit(failed ? 1 : 0);
