package apiserver_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/server/servertest"
)

// A read or watch at a resourceVersion the server has not reached is
// kube-apiserver's 504 with retryAfterSeconds 1 and the
// ResourceVersionTooLarge cause, the one client-go's reflector tests for, on
// every path that gives it: get and list waiting for the cache, an exact
// list from storage, and a watch.
func TestTooLargeResourceVersionCarriesItsCause(t *testing.T) {
	srv := servertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leases := srv.Client.CoordinationV1().Leases("default")
	created, err := leases.Create(ctx, newLease("too-large", "holder"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv, err := strconv.ParseInt(created.ResourceVersion, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	future := strconv.FormatInt(rv+1_000_000, 10)
	check := func(what string, err error) {
		t.Helper()
		var se *apierrors.StatusError
		if !errors.As(err, &se) {
			t.Fatalf("%s: %v, want a Status error", what, err)
		}
		st := se.ErrStatus
		if st.Code != http.StatusGatewayTimeout || st.Reason != metav1.StatusReasonTimeout || st.Details == nil || st.Details.RetryAfterSeconds != 1 {
			t.Fatalf("%s: %+v, want 504 Timeout with retryAfterSeconds 1", what, st)
		}
		if !apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge) {
			t.Fatalf("%s: causes %+v, want ResourceVersionTooLarge", what, st.Details.Causes)
		}
		if want := "Timeout: Too large resource version: " + future + ", current: "; len(st.Message) < len(want) || st.Message[:len(want)] != want {
			t.Fatalf("%s: message %q, want prefix %q", what, st.Message, want)
		}
	}
	_, err = leases.Get(ctx, "too-large", metav1.GetOptions{ResourceVersion: future})
	check("get", err)
	_, err = leases.List(ctx, metav1.ListOptions{ResourceVersion: future})
	check("list", err)
	_, err = leases.List(ctx, metav1.ListOptions{ResourceVersion: future, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	check("exact list", err)
	_, err = leases.Watch(ctx, metav1.ListOptions{ResourceVersion: future})
	check("watch", err)
}
