package leasecopy

import (
	"context"
	"maps"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// ctxFor is a context that ends with the test or after d.
func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// fullLease is a lease with every copied field set: a leader-election
// lease in its third term, labelled, annotated and owned by a Deployment
// (a kind Leasehold does not serve, so its garbage collector keeps the
// reference rather than collecting a lease whose owner it cannot see).
func fullLease(ns, name string, renew time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns,
			Labels:      map[string]string{"app": "demo", "tier": "control"},
			Annotations: map[string]string{"example.com/note": "copied"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "Deployment", Name: "demo",
				UID: types.UID("0b5e1c9a-4f51-4a7e-9d7e-2f0a3c1d9e11"), Controller: ptr.To(true),
			}},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("demo-7d9f_1"),
			LeaseDurationSeconds: ptr.To[int32](15),
			AcquireTime:          &metav1.MicroTime{Time: renew.Add(-time.Minute)},
			RenewTime:            &metav1.MicroTime{Time: renew},
			LeaseTransitions:     ptr.To[int32](3),
			Strategy:             ptr.To(coordinationv1.OldestEmulationVersion),
			PreferredHolder:      ptr.To("demo-7d9f_2"),
		},
	}
}

// nodeLease is a kubelet's lease, as the kubelet writes it.
func nodeLease(node string, renew time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: "kube-node-lease"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(node),
			LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime:            &metav1.MicroTime{Time: renew},
		},
	}
}

// create creates ns (unless it exists) and the leases in c.
func create(t *testing.T, c kubernetes.Interface, leases ...*coordinationv1.Lease) []*coordinationv1.Lease {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	var out []*coordinationv1.Lease
	for _, l := range leases {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: l.Namespace}}
		if _, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating namespace %s: %v", l.Namespace, err)
		}
		got, err := c.CoordinationV1().Leases(l.Namespace).Create(ctx, l, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating lease %s/%s: %v", l.Namespace, l.Name, err)
		}
		out = append(out, got)
	}
	return out
}

// get returns namespace/name from c, or nil when it does not exist.
func get(t *testing.T, c kubernetes.Interface, ns, name string) *coordinationv1.Lease {
	t.Helper()
	l, err := c.CoordinationV1().Leases(ns).Get(ctxFor(t, 10*time.Second), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("get lease %s/%s: %v", ns, name, err)
	}
	return l
}

// sameContent reports whether two leases carry the same copied content,
// and says what differs.
func contentDiff(want, got *coordinationv1.Lease) string {
	switch {
	case got == nil:
		return "missing"
	case !equality.Semantic.DeepEqual(want.Spec, got.Spec):
		return "spec differs"
	case !maps.Equal(want.Labels, got.Labels):
		return "labels differ"
	case !maps.Equal(want.Annotations, got.Annotations):
		return "annotations differ"
	case !equality.Semantic.DeepEqual(want.OwnerReferences, got.OwnerReferences):
		return "ownerReferences differ"
	}
	return ""
}

// requireCopied fails unless every want has its copy on c.
func requireCopied(t *testing.T, c kubernetes.Interface, want ...*coordinationv1.Lease) {
	t.Helper()
	for _, w := range want {
		got := get(t, c, w.Namespace, w.Name)
		if d := contentDiff(w, got); d != "" {
			t.Fatalf("lease %s/%s on the target: %s\nwant %+v\ngot  %+v", w.Namespace, w.Name, d, w, got)
		}
	}
}

// waitFor polls cond every 10 ms for up to d and returns how long it took;
// it fails the test with what when cond never holds.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		if cond() {
			return time.Since(start)
		}
		if time.Since(start) > d {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
