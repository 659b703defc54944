// A small leader elector on the Lease API with @kubernetes/client-node, as
// a JavaScript user writes one (the client has no elector of its own).
//
// Usage: node elector.mjs LEASE IDENTITY
//
// Every RETRY ms it reads the Lease. It takes the Lease when it is absent,
// free, or unchanged for a full lease duration as measured on its own clock
// (never comparing the recorded renewTime with its clock, as client-go);
// as holder it renews. Every write is a create or a replace carrying the
// resourceVersion that was read, so a lost race is a 409 and nothing else.
// Prints "LEADING IDENTITY" when it becomes leader; killed, it simply stops
// renewing and another candidate takes over after the lease duration.
import * as k8s from '@kubernetes/client-node';

const [name, identity] = process.argv.slice(2);
const NS = 'default';
const DURATION_S = 4;
const RETRY_MS = 1000;
const kc = new k8s.KubeConfig();
kc.loadFromDefault();
const api = kc.makeApiClient(k8s.CoordinationV1Api);

let observed = null; // {rv, at}: the record last seen changing, on our clock
let leading = false;

async function tryAcquireOrRenew() {
  // MicroTime fields need six fractional digits: V1MicroTime, not Date.
  const now = new k8s.V1MicroTime();
  let cur;
  try {
    cur = await api.readNamespacedLease({ name, namespace: NS });
  } catch (e) {
    if (e.code !== 404) throw e;
    await api.createNamespacedLease({ namespace: NS, body: { metadata: { name }, spec: {
      holderIdentity: identity, leaseDurationSeconds: DURATION_S, acquireTime: now, renewTime: now, leaseTransitions: 0 } } });
    return true;
  }
  const spec = cur.spec || {};
  if (!observed || observed.rv !== cur.metadata.resourceVersion) observed = { rv: cur.metadata.resourceVersion, at: Date.now() };
  const holder = spec.holderIdentity;
  const expired = Date.now() - observed.at > (spec.leaseDurationSeconds || DURATION_S) * 1000;
  if (holder && holder !== identity && !expired) return false;
  if (holder !== identity) {
    spec.acquireTime = now;
    spec.leaseTransitions = (spec.leaseTransitions || 0) + 1;
  }
  spec.holderIdentity = identity;
  spec.leaseDurationSeconds = DURATION_S;
  spec.renewTime = now;
  cur.spec = spec;
  await api.replaceNamespacedLease({ name, namespace: NS, body: cur });
  return true;
}

// RENEW_DEADLINE_MS: a leader that has not renewed for this long stops
// leading (exits), before its lease can run out for the others.
const RENEW_DEADLINE_MS = 3000;
let lastRenew = 0;
for (;;) {
  let ok = false;
  try {
    ok = await tryAcquireOrRenew();
  } catch (e) {
    if (e.code !== 409) console.error(`${identity}: ${e.message}`);
  }
  if (ok) {
    lastRenew = Date.now();
    if (!leading) console.log(`LEADING ${identity}`);
    leading = true;
  } else if (leading && Date.now() - lastRenew > RENEW_DEADLINE_MS) {
    console.log(`STOPPED ${identity}`);
    process.exit(75);
  }
  await new Promise((r) => setTimeout(r, RETRY_MS));
}
