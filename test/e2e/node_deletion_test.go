package e2e

// Scenario 3 (the first seed's "Node Delete" practice, the README tour's deleted node): deleting a
// Node makes the garbage collector delete its lease; the agent keeps
// running and logs what the kubelet logs; restarted, it registers a new
// Node and creates a new lease. And the variant the garbage collector's
// name-then-uid rule exists for: a Node deleted and re-created under the
// same name.

import (
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/leasehold/leasehold/internal/testdeps/nodeenv"
)

func TestNodeDeletionAndReregistration(t *testing.T) {
	t.Parallel()
	c := newNodeCluster(t, fastServerArgs...)
	names := nodeenv.Names("del", 2)
	deleted, other := names[0], names[1]
	agents := c.startAgents(names, fastAgentArgs...)
	agent := agents[0]
	oldNode, oldLease := c.WaitRegistered(deleted, fastSlack, fastRenew+fastSlack)
	_, otherLease := c.WaitRegistered(other, fastSlack, fastRenew+fastSlack)
	// RemovingNode follows only a registration the controller saw (as in
	// kube-controller-manager, nodes are classified on monitor passes), so
	// wait for it before deleting.
	c.waitNodeEvent(deleted, "RegisteredNode", fmt.Sprintf("Node %s event: Registered Node %s in Controller", deleted, deleted), fastSlack)

	mark := agent.Mark()
	if out := c.kubectl.run("delete", "node", deleted); strings.TrimSpace(out) != fmt.Sprintf("node %q deleted", deleted) {
		t.Errorf("kubectl delete node printed %q", out)
	}
	c.WaitLeaseGone(deleted, fastSlack)
	if l, err := c.Lease(other); err != nil || l.UID != otherLease.UID {
		t.Errorf("the other node's lease was touched: %v, err %v", l, err)
	}
	c.waitNodeEvent(deleted, "RemovingNode", fmt.Sprintf("Node %s event: Removing Node %s from Controller", deleted, deleted), fastSlack)

	// The running agent logs the kubelet's errors from the seed, and keeps
	// going.
	notFound := fmt.Sprintf(`nodes \"%s\" not found`, deleted)
	agent.WaitLine(mark, fastStatusUpdate+fastSlack, `level=ERROR`, `msg="Error updating node status, will retry"`, notFound)
	agent.WaitLine(mark, fastSlack, `msg="Unable to update node status"`, "update node status exceeds retry count")
	agent.WaitLine(mark, fastRenew+fastSlack, `level=ERROR`, `msg="Failed to update lease"`, "Precondition failed")
	_, again, err := agent.AwaitLine(mark, fastRenew+fastSlack, `level=ERROR`, `msg="Failed to get node when trying to set owner ref to the node lease"`, notFound)
	if err != nil {
		t.Fatal(err)
	}
	// Still trying a renewal later: the agent did not give up or crash.
	agent.WaitLine(again+1, 2*fastRenew+fastSlack,
		`msg="Failed to get node when trying to set owner ref to the node lease"`)
	if !agent.Running() {
		t.Fatal("agent exited after its Node was deleted")
	}
	// It neither registers again nor creates a lease without an owner.
	if _, err := c.Node(deleted); !apierrors.IsNotFound(err) {
		t.Errorf("node %s while its agent runs on: err = %v, want NotFound", deleted, err)
	}
	if _, err := c.Lease(deleted); !apierrors.IsNotFound(err) {
		t.Errorf("lease %s while its Node is deleted: err = %v, want NotFound", deleted, err)
	}
	if got := c.kubectlNodeStatus(); fmt.Sprint(got) != fmt.Sprint(map[string]string{other: "Ready"}) {
		t.Errorf("kubectl get nodes after the delete: %v, want only %s Ready", got, other)
	}
	if got := c.kubectlLeaseHolders(); fmt.Sprint(got) != fmt.Sprint(map[string]string{other: other}) {
		t.Errorf("kubectl get lease -n kube-node-lease after the delete: %v, want only %s", got, other)
	}

	// Re-registration: restart the agent.
	agent.Stop()
	agent.Restart()
	newNode := c.WaitReady(deleted, fastSlack)
	if newNode.UID == oldNode.UID {
		t.Errorf("re-registered node has the old uid %s", oldNode.UID)
	}
	newLease := c.WaitOwnedLease(deleted, newNode.UID, fastRenew+fastSlack)
	if newLease.UID == oldLease.UID {
		t.Errorf("lease after re-registration has the old uid %s", oldLease.UID)
	}
	if h := newLease.Spec.HolderIdentity; h == nil || *h != deleted {
		t.Errorf("new lease holder = %v, want %s", h, deleted)
	}
	c.waitKubectlNodeStatus(map[string]string{deleted: "Ready", other: "Ready"}, fastSlack)
	if got := c.kubectlLeaseHolders(); fmt.Sprint(got) != fmt.Sprint(map[string]string{deleted: deleted, other: other}) {
		t.Errorf("kubectl get lease -n kube-node-lease after re-registration: %v", got)
	}
}

// TestNodeRecreatedWithSameName: a Node deleted and created again under the
// same name (new uid) while its agent runs. The lease's owner reference
// names the old uid, so the garbage collector deletes the lease (owner
// resolved by name, then checked by uid), and the agent creates a new one
// owned by the new Node, which it reports Ready.
func TestNodeRecreatedWithSameName(t *testing.T) {
	t.Parallel()
	c := newNodeCluster(t, fastServerArgs...)
	names := nodeenv.Names("recreate", 1)
	name := names[0]
	agent := c.startAgents(names, fastAgentArgs...)[0]
	oldNode, oldLease := c.WaitRegistered(name, fastSlack, fastRenew+fastSlack)

	mark := agent.Mark()
	c.kubectl.run("delete", "node", name)
	c.kubectl.runWith(fmt.Sprintf("apiVersion: v1\nkind: Node\nmetadata:\n  name: %s\n  labels:\n    kubernetes.io/hostname: %s\n", name, name), nil, "create", "-f", "-")
	recreated, err := c.Node(name)
	if err != nil {
		t.Fatalf("re-created node: %v", err)
	}
	if recreated.UID == oldNode.UID {
		t.Fatalf("re-created node has the old uid %s", oldNode.UID)
	}

	lease := c.WaitOwnedLease(name, recreated.UID, 2*fastRenew+fastSlack)
	if lease.UID == oldLease.UID {
		t.Errorf("lease %s still the old object (uid %s) with its owner reference rewritten; want the old one collected and a new one created", name, lease.UID)
	}
	agent.WaitLine(mark, fastSlack, `msg="Created node lease"`, "uid="+string(lease.UID), "ownerUID="+string(recreated.UID))
	node := c.WaitReady(name, fastStatusUpdate+fastSlack)
	if node.UID != recreated.UID {
		t.Errorf("node uid %s, want the re-created %s", node.UID, recreated.UID)
	}
	if !agent.Running() {
		t.Error("agent exited")
	}
	c.waitKubectlNodeStatus(map[string]string{name: "Ready"}, fastSlack)
}
