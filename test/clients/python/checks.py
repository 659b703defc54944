"""Checks of Leasehold with Debian's python3-kubernetes, one per argument.

Run as `/usr/bin/python3 checks.py NAME...` with KUBECONFIG set. Each
check prints "ok NAME" when it holds and "FAIL NAME: why" (with the
traceback) when it does not; the others still run, and the exit status is 1
if any failed. python_test.go runs them all in one interpreter (starting
one costs seconds on a loaded machine) and reports each as a subtest.
"""
import json
import os
import sys
import threading
import time
import traceback

from kubernetes import client, config, dynamic, watch
from kubernetes.client.rest import ApiException

NS = "default"


class CheckFailed(Exception):
    pass


def fail(msg):
    raise CheckFailed(msg)


def want_status(fn, status, reason=None):
    """Calls fn and returns the ApiException it must raise with status."""
    try:
        fn()
    except ApiException as e:
        if e.status != status:
            fail("want HTTP %d, got %d: %s" % (status, e.status, e.body))
        if reason is not None and ('"reason":"%s"' % reason) not in e.body.replace(" ", ""):
            fail("want reason %s, got %s" % (reason, e.body))
        return e
    fail("want HTTP %d, got success" % status)


def lease(name, holder, duration=15):
    return client.V1Lease(metadata=client.V1ObjectMeta(name=name),
                          spec=client.V1LeaseSpec(holder_identity=holder, lease_duration_seconds=duration))


def check_discovery():
    # The generated clients call these paths with their trailing slash.
    if not client.VersionApi().get_code().git_version:
        fail("/version/ has no gitVersion")
    if "v1" not in client.CoreApi().get_api_versions().versions:
        fail("/api/ lacks v1")
    groups = [g.name for g in client.ApisApi().get_api_versions().groups]
    if "coordination.k8s.io" not in groups:
        fail("/apis/ lacks coordination.k8s.io: %s" % groups)
    if client.CoordinationApi().get_api_group().preferred_version.version != "v1":
        fail("/apis/coordination.k8s.io/ prefers another version")
    names = [r.name for r in client.CoordinationV1Api().get_api_resources().resources]
    if "leases" not in names:
        fail("/apis/coordination.k8s.io/v1/ lacks leases: %s" % names)
    core = [r.name for r in client.CoreV1Api().get_api_resources().resources]
    for want in ("configmaps", "events", "nodes", "nodes/status"):
        if want not in core:
            fail("/api/v1/ lacks %s: %s" % (want, core))
    # A resource Leasehold does not serve: kube's 404, naming no object.
    e = want_status(lambda: client.CoreV1Api().read_namespaced_secret("s", NS), 404, "NotFound")
    if "the server could not find the requested resource" not in e.body:
        fail("unserved resource: %s" % e.body)


def check_lease_crud():
    api = client.CoordinationV1Api()
    created = api.create_namespaced_lease(NS, lease("crud", "a"))
    want_status(lambda: api.create_namespaced_lease(NS, lease("crud", "a")), 409, "AlreadyExists")
    got = api.read_namespaced_lease("crud", NS)
    if got.spec.holder_identity != "a" or got.metadata.uid != created.metadata.uid:
        fail("read back %s" % got)
    got.spec.holder_identity = "b"
    renewed = api.replace_namespaced_lease("crud", NS, got)
    # The stale copy (old resourceVersion) is refused: the 409 electors rely on.
    created.spec.holder_identity = "c"
    want_status(lambda: api.replace_namespaced_lease("crud", NS, created), 409, "Conflict")
    items = api.list_namespaced_lease(NS, field_selector="metadata.name=crud").items
    if [l.spec.holder_identity for l in items] != ["b"]:
        fail("list: %s" % items)
    if renewed.metadata.resource_version == created.metadata.resource_version:
        fail("replace kept the resourceVersion")
    api.delete_namespaced_lease("crud", NS)
    e = want_status(lambda: api.read_namespaced_lease("crud", NS), 404, "NotFound")
    if 'leases.coordination.k8s.io \\"crud\\" not found' not in e.body and 'leases.coordination.k8s.io "crud" not found' not in e.body:
        fail("404 body: %s" % e.body)


def check_patches():
    api = client.CoordinationV1Api()
    api.create_namespaced_lease(NS, lease("patched", "a"))
    # A dict body is a strategic merge patch, a list a JSON patch.
    api.patch_namespaced_lease("patched", NS, {"spec": {"holderIdentity": "b"}})
    api.patch_namespaced_lease("patched", NS, [
        {"op": "test", "path": "/spec/holderIdentity", "value": "b"},
        {"op": "replace", "path": "/spec/holderIdentity", "value": "c"}])
    # A failed test (compare-and-swap lost) and a missing path are 422 Invalid.
    for ops in ([{"op": "test", "path": "/spec/holderIdentity", "value": "b"},
                 {"op": "replace", "path": "/spec/holderIdentity", "value": "x"}],
                [{"op": "remove", "path": "/spec/noSuchField"}]):
        want_status(lambda: api.patch_namespaced_lease("patched", NS, ops), 422, "Invalid")
    dyn = dynamic.DynamicClient(client.ApiClient())
    leases = dyn.resources.get(api_version="coordination.k8s.io/v1", kind="Lease")
    dyn.patch(leases, name="patched", namespace=NS, body={"spec": {"leaseDurationSeconds": 30}},
              content_type="application/merge-patch+json")
    applied = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
               "metadata": {"name": "patched", "namespace": NS}, "spec": {"holderIdentity": "d"}}
    # The earlier patches' manager owns holderIdentity: without force the
    # apply conflicts, and force=True (how this client spells it) takes it.
    want_status(lambda: apply_lease(applied, "first"), 409, "Conflict")
    apply_lease(applied, "first", force=True)
    applied["spec"]["holderIdentity"] = "e"
    want_status(lambda: apply_lease(applied, "second"), 409, "Conflict")
    apply_lease(applied, "second", force=True)
    got = api.read_namespaced_lease("patched", NS)
    if got.spec.holder_identity != "e" or got.spec.lease_duration_seconds != 30:
        fail("after patches: %s" % got.spec)
    owners = {m.manager for m in got.metadata.managed_fields}
    if "second" not in owners:
        fail("managedFields: %s" % owners)


def apply_lease(body, manager, force=None):
    """Server-side apply. In this client version the typed API cannot choose
    the apply content type and the dynamic client's server_side_apply
    refuses a dict body, so a user goes through call_api, as here."""
    query = [("fieldManager", manager)]
    if force is not None:
        query.append(("force", force))
    return client.ApiClient().call_api(
        "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}", "PATCH",
        path_params={"namespace": body["metadata"]["namespace"], "name": body["metadata"]["name"]},
        query_params=query, body=json.dumps(body), response_type="V1Lease",
        header_params={"Content-Type": "application/apply-patch+yaml", "Accept": "application/json"},
        auth_settings=["BearerToken"], _return_http_data_only=True)


def check_watch():
    api = client.CoordinationV1Api()
    rv = api.list_namespaced_lease(NS).metadata.resource_version

    def writes():
        time.sleep(0.5)
        l = api.create_namespaced_lease(NS, lease("watched", "a"))
        l.spec.holder_identity = "b"
        api.replace_namespaced_lease("watched", NS, l)
        api.delete_namespaced_lease("watched", NS)

    t = threading.Thread(target=writes)
    t.start()
    seen = []
    w = watch.Watch()
    # The client sends watch=True: it must be a stream, not a list.
    for ev in w.stream(api.list_namespaced_lease, NS, resource_version=rv, timeout_seconds=20):
        seen.append((ev["type"], ev["object"].spec.holder_identity))
        if ev["type"] == "DELETED":
            w.stop()
    t.join()
    if seen != [("ADDED", "a"), ("MODIFIED", "b"), ("DELETED", "b")]:
        fail("watch saw %s" % seen)


def check_watch_gone():
    """Run against a server with a small --watch-cache-window."""
    api = client.CoordinationV1Api()
    old = api.create_namespaced_lease(NS, lease("churn", "a")).metadata.resource_version
    l = api.read_namespaced_lease("churn", NS)
    for i in range(60):
        l.spec.holder_identity = "h%d" % i
        l = api.replace_namespaced_lease("churn", NS, l)
    w = watch.Watch()
    try:
        for _ in w.stream(api.list_namespaced_lease, NS, resource_version=old, timeout_seconds=10):
            pass
    except ApiException as e:
        if e.status != 410 or "Expired" not in (e.reason or ""):
            fail("want 410 Expired, got %d %s" % (e.status, e.reason))
    else:
        fail("a watch from a compacted resourceVersion ended without 410")
    # The way back: list, then watch from the list's resourceVersion.
    rv = api.list_namespaced_lease(NS).metadata.resource_version
    for _ in w.stream(api.list_namespaced_lease, NS, resource_version=rv, timeout_seconds=1):
        fail("an event after a fresh list's resourceVersion with no writes")


def check_watch_renewals():
    """A watch sees every renewal of leases renewed back to back."""
    api = client.CoordinationV1Api()
    names = ["renew-%d" % i for i in range(5)]
    rounds = 20
    for n in names:
        api.create_namespaced_lease(NS, lease(n, n))
    rv = api.list_namespaced_lease(NS).metadata.resource_version
    written = set()

    def renew():
        current = {n: api.read_namespaced_lease(n, NS) for n in names}
        for _ in range(rounds):
            for n in names:
                l = current[n]
                l.spec.lease_transitions = (l.spec.lease_transitions or 0) + 1
                current[n] = api.replace_namespaced_lease(n, NS, l)
                written.add(current[n].metadata.resource_version)

    t = threading.Thread(target=renew)
    t.start()
    seen = set()
    w = watch.Watch()
    for ev in w.stream(api.list_namespaced_lease, NS, resource_version=rv, timeout_seconds=60):
        if ev["type"] == "MODIFIED" and ev["object"].metadata.name in names:
            seen.add(ev["object"].metadata.resource_version)
            if len(seen) == rounds * len(names):
                w.stop()
    t.join()
    if len(written) != rounds * len(names) or written != seen:
        fail("watch missed %d of %d renewals" % (len(written - seen), len(written)))


def check_nodes():
    api = client.CoreV1Api()
    node = client.V1Node(metadata=client.V1ObjectMeta(name="py-node", labels={"pool": "py"}))
    api.create_node(node)
    status = {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                         "message": "ready", "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                                         "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                         "nodeInfo": {"kubeletVersion": "v1.33.0", "machineID": "", "systemUUID": "",
                                      "bootID": "", "kernelVersion": "", "osImage": "",
                                      "containerRuntimeVersion": "", "kubeProxyVersion": "",
                                      "operatingSystem": "linux", "architecture": "amd64"}}}
    api.patch_node_status("py-node", status)
    got = api.read_node_status("py-node")
    if [c.type + "=" + c.status for c in got.status.conditions] != ["Ready=True"]:
        fail("status: %s" % got.status.conditions)
    got.metadata.labels["zone"] = "a"
    got.status.conditions[0].status = "False"
    api.replace_node("py-node", got)  # a main-resource update keeps the status
    again = api.read_node("py-node")
    if again.status.conditions[0].status != "True" or again.metadata.labels.get("zone") != "a":
        fail("replace_node changed status or lost the label: %s" % again)
    if [n.metadata.name for n in api.list_node(label_selector="pool=py").items] != ["py-node"]:
        fail("list by label")
    api.delete_node("py-node")


def check_events():
    api = client.CoreV1Api()
    for name, obj, reason in (("e1", "web-1", "Started"), ("e2", "web-1", "BackOff"), ("e3", "web-2", "Started")):
        api.create_namespaced_event(NS, client.CoreV1Event(
            metadata=client.V1ObjectMeta(name=name), reason=reason, message=name, type="Normal",
            involved_object=client.V1ObjectReference(kind="Pod", name=obj, namespace=NS),
            first_timestamp="2026-01-01T00:00:00Z", last_timestamp="2026-01-01T00:00:00Z", count=1))
    for selector, want in (("involvedObject.name=web-1", ["e1", "e2"]),
                           ("involvedObject.name=web-1,reason=Started", ["e1"]),
                           # The node lifecycle controller records events about
                           # the nodes check's node in this namespace too, at any
                           # moment: "!=" is asked among the Pods' events only.
                           ("involvedObject.kind=Pod,reason!=Started", ["e2"]),
                           ("involvedObject.kind=Pod,involvedObject.namespace=default", ["e1", "e2", "e3"])):
        got = sorted(e.metadata.name for e in api.list_namespaced_event(NS, field_selector=selector).items)
        if got != want:
            fail("%s: %s, want %s" % (selector, got, want))
    want_status(lambda: api.list_namespaced_event(NS, field_selector="spec.nope=x"), 400, "BadRequest")


def check_untrusted_cert():
    """A client certificate the server does not trust is a 401 Status, not a handshake failure."""
    cfg = client.Configuration.get_default_copy()
    cfg.cert_file, cfg.key_file = os.environ["UNTRUSTED_CERT"], os.environ["UNTRUSTED_KEY"]
    api = client.CoordinationV1Api(client.ApiClient(cfg))
    want_status(lambda: api.list_namespaced_lease(NS), 401, "Unauthorized")


CHECKS = {name[len("check_"):]: fn for name, fn in globals().items() if name.startswith("check_")}

if __name__ == "__main__":
    config.load_kube_config()
    failed = False
    for name in sys.argv[1:]:
        try:
            CHECKS[name]()
            print("ok", name, flush=True)
        except Exception as e:  # report every check, then fail the run
            failed = True
            print("FAIL %s: %s\n%s" % (name, e, traceback.format_exc()), flush=True)
    sys.exit(1 if failed else 0)
