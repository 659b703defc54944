package apiserveridentity_test

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/internal/controller/apiserveridentity"
)

func logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// serverLister lists identity leases from the server, standing in for the
// watch cache `serve` passes (same objects and selector, read over the API).
func serverLister(t *testing.T, c kubernetes.Interface) apiserveridentity.Lister {
	return func() []*coordinationv1.Lease {
		l, err := c.CoordinationV1().Leases(metav1.NamespaceSystem).List(context.Background(),
			metav1.ListOptions{LabelSelector: apiserveridentity.Selector})
		if err != nil {
			t.Errorf("list identity leases: %v", err)
			return nil
		}
		out := make([]*coordinationv1.Lease, len(l.Items))
		for i := range l.Items {
			out[i] = &l.Items[i]
		}
		return out
	}
}

// waitFor polls cond every 50ms until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// getLease returns the lease, or nil if it does not exist.
func getLease(t *testing.T, c kubernetes.Interface, name string) *coordinationv1.Lease {
	t.Helper()
	l, err := c.CoordinationV1().Leases(metav1.NamespaceSystem).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("get lease %s: %v", name, err)
	}
	return l
}

func leaseName(t *testing.T, host string) string {
	t.Helper()
	n, err := apiserveridentity.LeaseName(host)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// createIdentityLease creates the identity lease a replica on host would
// have left, last renewed at renewed (nil: never) with the given duration
// (nil: unset).
func createIdentityLease(t *testing.T, c kubernetes.Interface, host string, renewed *time.Time, duration *int32) *coordinationv1.Lease {
	t.Helper()
	name := leaseName(t, host)
	holder := name + "_0b6f3c2e-5d8a-4f51-9a77-0f2d3e4c5b6a"
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem, Labels: map[string]string{
			apiserveridentity.IdentityLabel: apiserveridentity.Component,
			"kubernetes.io/hostname":        host,
		}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: duration},
	}
	if renewed != nil {
		l.Spec.RenewTime = &metav1.MicroTime{Time: *renewed}
	}
	out, err := c.CoordinationV1().Leases(metav1.NamespaceSystem).Create(context.Background(), l, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create identity lease for %s: %v", host, err)
	}
	return out
}

func ptr[T any](v T) *T { return &v }
