package e2e

// Scenario 1 (the first seed, the README tour's heartbeat): every `leasehold agent` registers
// its Node and heartbeats through Lease kube-node-lease/NAME, which kubectl
// shows as the seed does.

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/leasehold/leasehold/internal/testdeps/nodeenv"
)

// microTimeRE is a metav1.MicroTime as the seed's renewTime prints it
// ("2024-04-05T04:19:33.283190Z").
var microTimeRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)

func TestNodeHeartbeatLeases(t *testing.T) {
	t.Parallel()
	// Scenario 1 needs no controller timing, so the server runs as shipped.
	c := newNodeCluster(t)
	names := nodeenv.Names("hb", 3)
	c.startAgents(names, fastAgentArgs...)

	uids := map[string]string{}
	for _, n := range names {
		node, _ := c.WaitRegistered(n, fastSlack, fastRenew+fastSlack)
		uids[n] = string(node.UID)
	}

	// `kubectl get lease -n kube-node-lease`: one lease per node, HOLDER is
	// the node, AGE is a kubectl age.
	holders := c.kubectlLeaseHolders()
	if len(holders) != len(names) {
		t.Errorf("kubectl get lease -n kube-node-lease lists %d leases, want %d: %v", len(holders), len(names), holders)
	}
	for _, n := range names {
		if holders[n] != n {
			t.Errorf("lease %s HOLDER = %q, want the node name", n, holders[n])
		}
	}
	if got := c.kubectlNodeStatus(); len(got) != len(names) || got[names[0]] != "Ready" || got[names[1]] != "Ready" || got[names[2]] != "Ready" {
		t.Errorf("kubectl get nodes STATUS = %v, want all %d Ready", got, len(names))
	}

	// `-o yaml` has exactly the seed's fields.
	name := names[0]
	first := leaseYAML(t, c, name)
	checkSeedLeaseYAML(t, first, name, uids[name])

	// renewTime advances, on the same object, about every renew interval
	// (nodeenv checks both), and kubectl shows the renewal.
	firstRenew := mustMicroTime(t, first, "spec", "renewTime")
	renewed := c.WaitRenewed(name, types.UID(str(first, "metadata", "uid")), firstRenew, fastRenew, 2*fastRenew+fastSlack)
	second := leaseYAML(t, c, name)
	if got := mustMicroTime(t, second, "spec", "renewTime"); got.Before(renewed.Spec.RenewTime.Time) {
		t.Errorf("kubectl shows renewTime %v, before the renewal at %v", got, renewed.Spec.RenewTime.Time)
	}
	if got, want := str(second, "metadata", "uid"), str(first, "metadata", "uid"); got != want {
		t.Errorf("lease uid changed from %s to %s: renewals must update, not re-create", want, got)
	}
	if got, want := str(second, "metadata", "creationTimestamp"), str(first, "metadata", "creationTimestamp"); got != want {
		t.Errorf("creationTimestamp changed from %s to %s", want, got)
	}
}

// leaseYAML is `kubectl get lease -n kube-node-lease NAME -o yaml` as a
// generic map, so absent and extra fields are visible.
func leaseYAML(t *testing.T, c *nodeCluster, name string) map[string]any {
	t.Helper()
	out := c.kubectl.run("get", "lease", "-n", corev1.NamespaceNodeLease, name, "-o", "yaml")
	var m map[string]any
	if err := yaml.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("kubectl get lease -o yaml: %v\n%s", err, out)
	}
	return m
}

// checkSeedLeaseYAML compares the field set with the seed's output:
//
//	apiVersion, kind, metadata{creationTimestamp, name, namespace,
//	ownerReferences[{apiVersion, kind, name, uid}], resourceVersion, uid},
//	spec{holderIdentity, leaseDurationSeconds, renewTime}
func checkSeedLeaseYAML(t *testing.T, m map[string]any, node, nodeUID string) {
	t.Helper()
	if got := strings.Join(keys(m), ","); got != "apiVersion,kind,metadata,spec" {
		t.Errorf("top-level fields = %s", got)
	}
	if str(m, "apiVersion") != "coordination.k8s.io/v1" || str(m, "kind") != "Lease" {
		t.Errorf("apiVersion/kind = %s/%s", str(m, "apiVersion"), str(m, "kind"))
	}
	meta, _ := m["metadata"].(map[string]any)
	if got := strings.Join(keys(meta), ","); got != "creationTimestamp,name,namespace,ownerReferences,resourceVersion,uid" {
		t.Errorf("metadata fields = %s (the seed shows creationTimestamp,name,namespace,ownerReferences,resourceVersion,uid; managedFields are hidden by kubectl)", got)
	}
	if str(m, "metadata", "name") != node || str(m, "metadata", "namespace") != corev1.NamespaceNodeLease {
		t.Errorf("metadata name/namespace = %s/%s", str(m, "metadata", "name"), str(m, "metadata", "namespace"))
	}
	if _, err := time.Parse(time.RFC3339, str(m, "metadata", "creationTimestamp")); err != nil {
		t.Errorf("creationTimestamp: %v", err)
	}
	refs, _ := meta["ownerReferences"].([]any)
	if len(refs) != 1 {
		t.Fatalf("ownerReferences = %v, want one", meta["ownerReferences"])
	}
	ref, _ := refs[0].(map[string]any)
	if got := strings.Join(keys(ref), ","); got != "apiVersion,kind,name,uid" {
		t.Errorf("ownerReference fields = %s, want apiVersion,kind,name,uid (no controller, no blockOwnerDeletion, as the kubelet)", got)
	}
	if ref["apiVersion"] != "v1" || ref["kind"] != "Node" || ref["name"] != node || ref["uid"] != nodeUID {
		t.Errorf("ownerReference = %v, want v1 Node %s uid %s", ref, node, nodeUID)
	}
	spec, _ := m["spec"].(map[string]any)
	if got := strings.Join(keys(spec), ","); got != "holderIdentity,leaseDurationSeconds,renewTime" {
		t.Errorf("spec fields = %s, want holderIdentity,leaseDurationSeconds,renewTime (no acquireTime, no leaseTransitions)", got)
	}
	if spec["holderIdentity"] != node {
		t.Errorf("holderIdentity = %v, want %s", spec["holderIdentity"], node)
	}
	if d, ok := spec["leaseDurationSeconds"].(float64); !ok || d != 8 {
		t.Errorf("leaseDurationSeconds = %v, want 8 (--node-lease-duration-seconds)", spec["leaseDurationSeconds"])
	}
	if !microTimeRE.MatchString(str(m, "spec", "renewTime")) {
		t.Errorf("renewTime = %q, want microseconds like the seed's 2024-04-05T04:19:33.283190Z", str(m, "spec", "renewTime"))
	}
}

// str is the string at path in m, "" if absent.
func str(m map[string]any, path ...string) string {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = mm[p]
	}
	s, _ := cur.(string)
	return s
}

func mustMicroTime(t *testing.T, m map[string]any, path ...string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, str(m, path...))
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(path, "."), err)
	}
	return v
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
