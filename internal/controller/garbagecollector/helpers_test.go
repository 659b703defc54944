package garbagecollector_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// waitTimeout bounds every wait for the collector; it normally acts within
// milliseconds.
const waitTimeout = 10 * time.Second

// leaseRef is an owner reference to a lease.
func leaseRef(l *coordinationv1.Lease, block bool) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Name: l.Name, UID: l.UID, BlockOwnerDeletion: &block}
}

func createLease(t *testing.T, c kubernetes.Interface, ns, name string, finalizers []string, owners ...metav1.OwnerReference) *coordinationv1.Lease {
	t.Helper()
	holder := "holder"
	l, err := c.CoordinationV1().Leases(ns).Create(context.Background(), &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, OwnerReferences: owners, Finalizers: finalizers},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating lease %s/%s: %v", ns, name, err)
	}
	return l
}

// getLease returns the lease, or nil when it does not exist.
func getLease(t *testing.T, c kubernetes.Interface, ns, name string) *coordinationv1.Lease {
	t.Helper()
	l, err := c.CoordinationV1().Leases(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("getting lease %s/%s: %v", ns, name, err)
	}
	return l
}

func waitLeaseGone(t *testing.T, c kubernetes.Interface, ns, name string) {
	t.Helper()
	testdeps.Eventually(t, waitTimeout, 10*time.Millisecond, fmt.Sprintf("lease %s/%s deleted", ns, name), func() (bool, error) {
		return getLease(t, c, ns, name) == nil, nil
	})
}

func deleteLease(t *testing.T, c kubernetes.Interface, ns, name string, policy *metav1.DeletionPropagation) {
	t.Helper()
	if err := c.CoordinationV1().Leases(ns).Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: policy}); err != nil {
		t.Fatalf("deleting lease %s/%s: %v", ns, name, err)
	}
}

// dropFinalizers removes every finalizer of a lease (a merge patch).
func dropFinalizers(t *testing.T, c kubernetes.Interface, ns, name string) {
	t.Helper()
	_, err := c.CoordinationV1().Leases(ns).Patch(context.Background(), name, types.MergePatchType,
		[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("removing finalizers of %s/%s: %v", ns, name, err)
	}
}

func createNamespace(t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	if _, err := c.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

// served tells whether the server serves resource in group version gv.
func served(t *testing.T, c kubernetes.Interface, gv, resource string) bool {
	t.Helper()
	list, err := c.Discovery().ServerResourcesForGroupVersion(gv)
	if err != nil {
		t.Fatalf("discovery of %s: %v", gv, err)
	}
	for _, r := range list.APIResources {
		if r.Name == resource {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }
