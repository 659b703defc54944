package noderestriction_test

import (
	"context"
	"net/http"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/admission"
	"github.com/leasehold/leasehold/internal/admission/noderestriction"
	"github.com/leasehold/leasehold/internal/request"
)

func nodeUser(name string) request.User {
	return request.User{Name: "system:node:" + name, Groups: []string{"system:nodes", "system:authenticated"}}
}

func lease(name string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-node-lease"}}
}

// leaseWrite is a write to a lease; name is the path's name (empty on create).
func leaseWrite(u request.User, op admission.Operation, ns, name string, obj runtime.Object) *admission.Attributes {
	return &admission.Attributes{
		Attributes: &request.Attributes{User: u, ResourceRequest: true, Verb: string(op), APIGroup: "coordination.k8s.io",
			APIVersion: "v1", Namespace: ns, Resource: "leases", Name: name},
		Operation: op, Object: obj,
	}
}

type nodeSpec struct {
	name   string
	labels map[string]string
	taints []corev1.Taint
	config bool
}

func (s nodeSpec) node() *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: s.name, Labels: s.labels}, Spec: corev1.NodeSpec{Taints: s.taints}}
	if s.config {
		//lint:ignore SA1019 a node must not set it, so tests set it
		n.Spec.ConfigSource = &corev1.NodeConfigSource{ConfigMap: &corev1.ConfigMapNodeConfigSource{Name: "c", Namespace: "kube-system", KubeletConfigKey: "k"}}
	}
	return n
}

func nodeWrite(u request.User, op admission.Operation, sub, name string, obj, old runtime.Object) *admission.Attributes {
	return &admission.Attributes{
		Attributes: &request.Attributes{User: u, ResourceRequest: true, APIVersion: "v1", Resource: "nodes", Subresource: sub, Name: name},
		Operation:  op, Object: obj, OldObject: old,
	}
}

func TestAdmit(t *testing.T) {
	node1 := nodeUser("node1")
	own := nodeSpec{name: "node1", labels: map[string]string{"kubernetes.io/hostname": "node1", "team": "a"}}.node()
	taint := []corev1.Taint{{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}}
	withLabels := func(extra map[string]string) *corev1.Node {
		n := own.DeepCopy()
		for k, v := range extra {
			if v == "" {
				delete(n.Labels, k)
			} else {
				n.Labels[k] = v
			}
		}
		return n
	}
	restricted := nodeSpec{name: "node1", labels: map[string]string{"node-restriction.kubernetes.io/x": "1", "other.k8s.io/y": "1"}}.node()

	cases := []struct {
		name  string
		attrs *admission.Attributes
		want  string // the Forbidden message; "" to admit
	}{
		// Not nodes.
		{"user creates another lease", leaseWrite(request.User{Name: "alice"}, admission.Create, "kube-node-lease", "", lease("node2")), ""},
		{"node name without the group", leaseWrite(request.User{Name: "system:node:node1"}, admission.Create, "kube-node-lease", "", lease("node2")), ""},
		{"unknown node", leaseWrite(nodeUser(""), admission.Create, "kube-node-lease", "", lease("node1")),
			`leases.coordination.k8s.io "node1" is forbidden: could not determine node from user "system:node:"`},

		// Leases.
		{"create own lease", leaseWrite(node1, admission.Create, "kube-node-lease", "", lease("node1")), ""},
		{"create other lease", leaseWrite(node1, admission.Create, "kube-node-lease", "", lease("node2")),
			`leases.coordination.k8s.io "node2" is forbidden: can only access node lease with the same name as the requesting node`},
		{"create lease with generateName only", leaseWrite(node1, admission.Create, "kube-node-lease", "", &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{GenerateName: "node1-"}}),
			`leases.coordination.k8s.io "node1-" is forbidden: can only access node lease with the same name as the requesting node`},
		{"create lease in another namespace", leaseWrite(node1, admission.Create, "default", "", lease("node1")),
			`leases.coordination.k8s.io "node1" is forbidden: can only access leases in the "kube-node-lease" system namespace`},
		{"update own lease", leaseWrite(node1, admission.Update, "kube-node-lease", "node1", lease("node1")), ""},
		{"update other lease", leaseWrite(node1, admission.Update, "kube-node-lease", "node2", lease("node2")),
			`leases.coordination.k8s.io "node2" is forbidden: can only access node lease with the same name as the requesting node`},
		{"delete own lease", leaseWrite(node1, admission.Delete, "kube-node-lease", "node1", nil), ""},
		{"delete other lease", leaseWrite(node1, admission.Delete, "kube-node-lease", "node2", nil),
			`leases.coordination.k8s.io "node2" is forbidden: can only access node lease with the same name as the requesting node`},

		// Nodes: which node.
		{"create own node", nodeWrite(node1, admission.Create, "", "", own, nil), ""},
		{"create other node", nodeWrite(node1, admission.Create, "", "", nodeSpec{name: "node2"}.node(), nil),
			`nodes "node2" is forbidden: node "node1" is not allowed to modify node "node2"`},
		{"update other node", nodeWrite(node1, admission.Update, "", "node2", nodeSpec{name: "node2"}.node(), nodeSpec{name: "node2"}.node()),
			`nodes "node2" is forbidden: node "node1" is not allowed to modify node "node2"`},
		{"update other node's status", nodeWrite(node1, admission.Update, "status", "node2", nodeSpec{name: "node2"}.node(), nodeSpec{name: "node2"}.node()),
			`nodes "node2" is forbidden: node "node1" is not allowed to modify node "node2"`},
		{"delete other node", nodeWrite(node1, admission.Delete, "", "node2", nil, nil),
			`nodes "node2" is forbidden: node "node1" is not allowed to modify node "node2"`},
		{"delete own node (refused by authorization, not here)", nodeWrite(node1, admission.Delete, "", "node1", nil, nil), ""},
		{"create of a non-node object", nodeWrite(node1, admission.Create, "", "node1", lease("node1"), nil),
			`nodes "node1" is forbidden: unexpected type *v1.Lease`},

		// Nodes: config source.
		{"create with a config source", nodeWrite(node1, admission.Create, "", "", nodeSpec{name: "node1", config: true}.node(), nil),
			`nodes "node1" is forbidden: node "node1" is not allowed to create pods with a non-nil configSource`},
		{"update setting a config source", nodeWrite(node1, admission.Update, "", "node1", nodeSpec{name: "node1", config: true}.node(), nodeSpec{name: "node1"}.node()),
			`nodes "node1" is forbidden: node "node1" is not allowed to update configSource to a new non-nil configSource`},
		{"update keeping a config source", nodeWrite(node1, admission.Update, "", "node1", nodeSpec{name: "node1", config: true}.node(), nodeSpec{name: "node1", config: true}.node()), ""},
		{"update dropping a config source", nodeWrite(node1, admission.Update, "", "node1", nodeSpec{name: "node1"}.node(), nodeSpec{name: "node1", config: true}.node()), ""},

		// Nodes: taints.
		{"create with taints", nodeWrite(node1, admission.Create, "", "", nodeSpec{name: "node1", taints: taint}.node(), nil), ""},
		{"update removing taints", nodeWrite(node1, admission.Update, "", "node1", nodeSpec{name: "node1"}.node(), nodeSpec{name: "node1", taints: taint}.node()),
			`nodes "node1" is forbidden: node "node1" is not allowed to modify taints`},
		{"status update adding taints", nodeWrite(node1, admission.Update, "status", "node1", nodeSpec{name: "node1", taints: taint}.node(), nodeSpec{name: "node1"}.node()),
			`nodes "node1" is forbidden: node "node1" is not allowed to modify taints`},
		{"update keeping taints", nodeWrite(node1, admission.Update, "", "node1", nodeSpec{name: "node1", taints: taint}.node(), nodeSpec{name: "node1", taints: taint}.node()), ""},
		{"nil and empty taints are equal", nodeWrite(node1, admission.Update, "", "node1", nodeSpec{name: "node1", taints: []corev1.Taint{}}.node(), nodeSpec{name: "node1"}.node()), ""},

		// Nodes: labels.
		{"create with kubelet labels", nodeWrite(node1, admission.Create, "", "", nodeSpec{name: "node1", labels: map[string]string{
			"kubernetes.io/hostname": "node1", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
			"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/instance-type": "m",
			"node.kubernetes.io/instance-type": "m", "topology.kubernetes.io/zone": "z", "topology.kubernetes.io/region": "r",
			"failure-domain.beta.kubernetes.io/zone": "z", "failure-domain.beta.kubernetes.io/region": "r",
			"kubelet.kubernetes.io/x": "1", "a.kubelet.kubernetes.io/x": "1", "node.kubernetes.io/y": "1", "b.node.kubernetes.io/y": "1",
			"example.com/z": "1", "plain": "1",
		}}.node(), nil), ""},
		{"create with restricted labels", nodeWrite(node1, admission.Create, "", "", restricted, nil),
			`nodes "node1" is forbidden: node "node1" is not allowed to set the following labels: node-restriction.kubernetes.io/x, other.k8s.io/y`},
		{"create with a restricted subdomain label", nodeWrite(node1, admission.Create, "", "", nodeSpec{name: "node1", labels: map[string]string{
			"a.node-restriction.kubernetes.io/x": "1", "beta.kubernetes.io/fluentd": "true", "k8s.io/z": "1"}}.node(), nil),
			`nodes "node1" is forbidden: node "node1" is not allowed to set the following labels: a.node-restriction.kubernetes.io/x, beta.kubernetes.io/fluentd, k8s.io/z`},
		{"update adding a restricted label", nodeWrite(node1, admission.Update, "", "node1", withLabels(map[string]string{"node-role.kubernetes.io/control-plane": "x"}), own),
			`nodes "node1" is forbidden: is not allowed to modify labels: node-role.kubernetes.io/control-plane`},
		{"update changing and removing restricted labels", nodeWrite(node1, admission.Update, "", "node1", withLabels(map[string]string{"node-restriction.kubernetes.io/x": "2", "other.k8s.io/y": ""}), withLabels(map[string]string{"node-restriction.kubernetes.io/x": "1", "other.k8s.io/y": "1"})),
			`nodes "node1" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/x, other.k8s.io/y`},
		{"update keeping restricted labels", nodeWrite(node1, admission.Update, "", "node1", restricted, restricted.DeepCopy()), ""},
		{"update changing kubelet and user labels", nodeWrite(node1, admission.Update, "", "node1", withLabels(map[string]string{"kubernetes.io/hostname": "h", "team": "", "new": "1"}), own), ""},

		// Other resources are not restricted.
		{"node creates an event", &admission.Attributes{Attributes: &request.Attributes{User: node1, ResourceRequest: true, APIVersion: "v1", Namespace: "default", Resource: "events"},
			Operation: admission.Create, Object: &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e"}, InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node2"}}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := noderestriction.Plugin{}.Admit(context.Background(), tc.attrs)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Admit: %v, want admitted", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) {
				t.Fatalf("Admit = %v, want Forbidden %q", err, tc.want)
			}
			status := err.(apierrors.APIStatus).Status()
			if status.Message != tc.want || status.Code != http.StatusForbidden {
				t.Errorf("Admit: %d %q, want 403 %q", status.Code, status.Message, tc.want)
			}
		})
	}
}

// TestForbiddenDetails checks the Status details clients read: group, kind
// (the resource) and name.
func TestForbiddenDetails(t *testing.T) {
	err := noderestriction.Plugin{}.Admit(context.Background(), leaseWrite(nodeUser("node1"), admission.Create, "kube-node-lease", "", lease("node2")))
	d := err.(apierrors.APIStatus).Status().Details
	if d == nil || d.Group != "coordination.k8s.io" || d.Kind != "leases" || d.Name != "node2" {
		t.Errorf("details = %+v", d)
	}
	if r := err.(apierrors.APIStatus).Status().Reason; r != metav1.StatusReasonForbidden {
		t.Errorf("reason = %q", r)
	}
}
