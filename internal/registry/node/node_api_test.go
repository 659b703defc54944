package node_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/leasehold/leasehold/internal/server/servertest"
)

func newNode(name string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"node-role.kubernetes.io/control-plane": "",
			"kubernetes.io/role":                    "worker",
		}},
		Spec: corev1.NodeSpec{
			PodCIDRs: []string{"10.244.0.0/24"},
			Taints:   []corev1.Taint{{Key: "example.com/dedicated", Value: "infra", Effect: corev1.TaintEffectNoSchedule}},
		},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady"}},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeHostName, Address: name},
				{Type: corev1.NodeInternalIP, Address: "192.0.2.10"},
			},
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.33.0", OSImage: "Debian GNU/Linux 13", KernelVersion: "6.12.0", ContainerRuntimeVersion: "containerd://2.0.0"},
		},
	}
}

// TestNodeStatusSubresource proves the split ownership of a Node over JSON
// and protobuf: create keeps the posted status, a main-resource update
// cannot change the status, and UpdateStatus cannot change the spec.
func TestNodeStatusSubresource(t *testing.T) {
	srv := servertest.Start(t)
	for _, tc := range []struct {
		name   string
		client kubernetes.Interface
	}{
		{"json", srv.Client},
		{"protobuf", kubernetes.NewForConfigOrDie(srv.ProtobufConfig())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			nodes := tc.client.CoreV1().Nodes()
			name := "node-" + tc.name
			created, err := nodes.Create(ctx, newNode(name), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			if created.Status.NodeInfo.KubeletVersion != "v1.33.0" || len(created.Status.Conditions) != 1 {
				t.Fatalf("create dropped the posted status: %+v", created.Status)
			}

			// Main resource: the spec changes, the status does not.
			upd := created.DeepCopy()
			upd.Spec.Unschedulable = true
			upd.Status.NodeInfo.KubeletVersion = "v9.9.9"
			updated, err := nodes.Update(ctx, upd, metav1.UpdateOptions{})
			if err != nil {
				t.Fatalf("update: %v", err)
			}
			if !updated.Spec.Unschedulable {
				t.Errorf("update lost the spec change")
			}
			if got := updated.Status.NodeInfo.KubeletVersion; got != "v1.33.0" {
				t.Errorf("update changed status: kubeletVersion %q", got)
			}

			// Status subresource: the status changes, the spec does not. The
			// node lifecycle controller may write the node meanwhile (an
			// unschedulable node gets its NoSchedule taint), so the status
			// write starts from a fresh read and retries on conflict.
			var before, afterStatus *corev1.Node
			err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				var err error
				if before, err = nodes.Get(ctx, name, metav1.GetOptions{}); err != nil {
					return err
				}
				st := before.DeepCopy()
				st.Spec.Unschedulable = false
				st.Spec.Taints = nil
				st.Status.Conditions[0].Status = corev1.ConditionFalse
				st.Status.NodeInfo.KubeletVersion = "v1.34.0"
				afterStatus, err = nodes.UpdateStatus(ctx, st, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				t.Fatalf("update status: %v", err)
			}
			if got := afterStatus.Status.NodeInfo.KubeletVersion; got != "v1.34.0" {
				t.Errorf("update status lost the status change: %q", got)
			}
			if !afterStatus.Spec.Unschedulable || !equality.Semantic.DeepEqual(afterStatus.Spec, before.Spec) {
				t.Errorf("update status changed spec: %+v, was %+v", afterStatus.Spec, before.Spec)
			}

			// What was returned is what is stored. The node lifecycle
			// controller may have tainted the now not-ready node since (a
			// newer resourceVersion), but the status written stays.
			got, err := nodes.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			if !got.Spec.Unschedulable || !equality.Semantic.DeepEqual(got.Status, afterStatus.Status) {
				t.Errorf("stored node differs from the last response: %+v", got)
			}

			// Field selector on spec.unschedulable.
			list, err := nodes.List(ctx, metav1.ListOptions{FieldSelector: "spec.unschedulable=true,metadata.name=" + name})
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			if len(list.Items) != 1 || list.Items[0].Name != name {
				t.Errorf("spec.unschedulable=true selected %d nodes", len(list.Items))
			}
			list, err = nodes.List(ctx, metav1.ListOptions{FieldSelector: "spec.unschedulable=false,metadata.name=" + name})
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			if len(list.Items) != 0 {
				t.Errorf("spec.unschedulable=false selected a cordoned node")
			}

			if err := nodes.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatalf("delete: %v", err)
			}
			if _, err := nodes.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("get after delete: %v", err)
			}
		})
	}
}

// TestNodeNoCreateOnUpdate: a PUT to a missing node is 404, unlike leases.
func TestNodeNoCreateOnUpdate(t *testing.T) {
	srv := servertest.Start(t)
	ctx := context.Background()
	n := newNode("ghost")
	n.ResourceVersion = "1"
	_, err := srv.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("update of a missing node: want 404, got %v", err)
	}
	_, err = srv.Client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("status update of a missing node: want 404, got %v", err)
	}
}

// TestNodeValidation checks taint and name messages as kube-apiserver gives them.
func TestNodeValidation(t *testing.T) {
	srv := servertest.Start(t)
	ctx := context.Background()
	nodes := srv.Client.CoreV1().Nodes()

	bad := newNode("tainted")
	bad.Spec.Taints = []corev1.Taint{
		{Key: "a/b/c", Effect: corev1.TaintEffectNoSchedule},
		{Key: "ok", Effect: "Sometimes"},
		{Key: "ok2"},
		{Key: "dup", Effect: corev1.TaintEffectNoExecute},
		{Key: "dup", Effect: corev1.TaintEffectNoExecute},
	}
	_, err := nodes.Create(ctx, bad, metav1.CreateOptions{})
	servertest.WantInvalid(t, err,
		`spec.taints[0].key: Invalid value: "a/b/c"`,
		`spec.taints[1].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`,
		`spec.taints[2].effect: Required value`,
		`spec.taints[4]: Duplicate value: `,
		`taints must be unique by key and effect pair`,
	)

	_, err = nodes.Create(ctx, newNode("Not_A_DNS_Name"), metav1.CreateOptions{})
	servertest.WantInvalid(t, err, `metadata.name: Invalid value: "Not_A_DNS_Name": a lowercase RFC 1123 subdomain`)

	created, err := nodes.Create(ctx, newNode("cidr"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	created.Spec.PodCIDRs = []string{"10.245.0.0/24"}
	_, err = nodes.Update(ctx, created, metav1.UpdateOptions{})
	servertest.WantInvalid(t, err, `spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid`)
}

// TestNodeTable asks for the server-side table as kubectl does and checks
// the columns and cells `kubectl get nodes -o wide` prints.
func TestNodeTable(t *testing.T) {
	srv := servertest.Start(t)
	ctx := context.Background()
	n := newNode("table-node")
	n.Spec.Unschedulable = true
	n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "198.51.100.7"})
	if _, err := srv.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	raw, err := srv.Client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes").
		SetHeader("Accept", "application/json;as=Table;g=meta.k8s.io;v=v1").Do(ctx).Raw()
	if err != nil {
		t.Fatalf("table request: %v", err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatalf("decoding table: %v", err)
	}
	if table.Kind != "Table" || table.APIVersion != "meta.k8s.io/v1" {
		t.Fatalf("got %s %s", table.APIVersion, table.Kind)
	}
	var names []string
	var wide []string
	for _, c := range table.ColumnDefinitions {
		names = append(names, c.Name)
		if c.Priority == 1 {
			wide = append(wide, c.Name)
		}
	}
	wantNames := []string{"Name", "Status", "Roles", "Age", "Version", "Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime"}
	if !slices.Equal(names, wantNames) {
		t.Errorf("columns %v, want %v", names, wantNames)
	}
	if !slices.Equal(wide, wantNames[5:]) {
		t.Errorf("wide columns %v, want %v", wide, wantNames[5:])
	}
	if len(table.Rows) != 1 {
		t.Fatalf("got %d rows", len(table.Rows))
	}
	cells := table.Rows[0].Cells
	want := []interface{}{"table-node", "Ready,SchedulingDisabled", "control-plane,worker", nil, "v1.33.0",
		"192.0.2.10", "198.51.100.7", "Debian GNU/Linux 13", "6.12.0", "containerd://2.0.0"}
	if len(cells) != len(want) {
		t.Fatalf("cells %v", cells)
	}
	for i, w := range want {
		if w != nil && cells[i] != w {
			t.Errorf("cell %s = %v, want %v", names[i], cells[i], w)
		}
	}
	if age, _ := cells[3].(string); age == "" || strings.Contains(age, "unknown") {
		t.Errorf("age cell %v", cells[3])
	}
	var meta metav1.PartialObjectMetadata
	if err := json.Unmarshal(table.Rows[0].Object.Raw, &meta); err != nil || meta.Name != "table-node" {
		t.Errorf("row object: %v %s", err, table.Rows[0].Object.Raw)
	}
}

// TestNodeDiscovery: client-go discovery lists nodes with their short name,
// verbs and status subresource.
func TestNodeDiscovery(t *testing.T) {
	srv := servertest.Start(t)
	list, err := srv.Client.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	found := map[string]metav1.APIResource{}
	for _, r := range list.APIResources {
		found[r.Name] = r
	}
	nodes, ok := found["nodes"]
	if !ok {
		t.Fatalf("v1 lacks nodes: %+v", list.APIResources)
	}
	if nodes.Namespaced || nodes.Kind != "Node" || !slices.Equal(nodes.ShortNames, []string{"no"}) {
		t.Errorf("nodes: %+v", nodes)
	}
	for _, v := range []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"} {
		if !slices.Contains(nodes.Verbs, v) {
			t.Errorf("nodes lacks verb %s: %v", v, nodes.Verbs)
		}
	}
	if _, ok := found["nodes/status"]; !ok {
		t.Errorf("v1 lacks nodes/status")
	}
}
