package election_test

import (
	"context"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/leasehold/leasehold/internal/controller/election"
	"github.com/leasehold/leasehold/internal/server/servertest"
)

// These tests run the election controller as `serve` wires it (default
// timings: 5 s election duration, 5 s leases), against client-go's own
// LeaseCandidate code: nothing here renews the elected Lease, so every
// hand-over also exercises expiry.

// runCandidate runs client-go's candidate until the test ends.
func runCandidate(t *testing.T, c kubernetes.Interface, ns, name, lease, binary, emulation string) {
	t.Helper()
	runCandidateWith(t, c, ns, name, lease, binary, emulation, coordinationv1.OldestEmulationVersion)
}

func runCandidateWith(t *testing.T, c kubernetes.Interface, ns, name, lease, binary, emulation string, strategy coordinationv1.CoordinatedLeaseStrategy) {
	t.Helper()
	cand, waiter, err := leaderelection.NewCandidate(c, ns, name, lease, binary, emulation, strategy)
	if err != nil {
		t.Fatalf("NewCandidate %s: %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { cand.Run(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		// client-go starts the candidate's informers but leaves waiting
		// for them to its caller.
		if f, ok := waiter.(interface{ Shutdown() }); ok {
			f.Shutdown()
		}
	})
}

// waitLease polls the Lease until ok accepts it.
func waitLease(t *testing.T, c kubernetes.Interface, ns, name string, within time.Duration, what string, ok func(*coordinationv1.Lease) bool) *coordinationv1.Lease {
	t.Helper()
	deadline := time.Now().Add(within)
	var last *coordinationv1.Lease
	for time.Now().Before(deadline) {
		l, err := c.CoordinationV1().Leases(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			last = l
			if ok(l) {
				return l
			}
		} else if !apierrors.IsNotFound(err) {
			t.Fatalf("get lease: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("lease %s/%s: %s not seen within %v; last: %+v", ns, name, what, within, last)
	return nil
}

func holderOf(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func TestOldestEmulationVersionWinsAndHandOver(t *testing.T) {
	srv := servertest.Start(t)
	const ns, lease = "kube-system", "cle-controller-test"
	runCandidate(t, srv.Client, ns, "cand-132", lease, "1.33.0", "1.32.0")
	runCandidate(t, srv.Client, ns, "cand-131", lease, "1.33.0", "1.31.0")
	runCandidate(t, srv.Client, ns, "cand-133", lease, "1.33.0", "1.33.0")

	// The first election may run before all three registered; then the
	// best one gets the Lease at the latest when the first holder's
	// (unrenewed) 5 s lease expires.
	l := waitLease(t, srv.Client, ns, lease, 30*time.Second, "holder cand-131", func(l *coordinationv1.Lease) bool {
		return holderOf(l) == "cand-131"
	})
	if d := l.Spec.LeaseDurationSeconds; d == nil || *d != election.DefaultLeaseDurationSeconds {
		t.Errorf("leaseDurationSeconds = %v, want %d", d, election.DefaultLeaseDurationSeconds)
	}
	if s := l.Spec.Strategy; s == nil || *s != coordinationv1.OldestEmulationVersion {
		t.Errorf("strategy = %v, want OldestEmulationVersion", s)
	}
	transitions := int32(0)
	if l.Spec.LeaseTransitions != nil {
		transitions = *l.Spec.LeaseTransitions
	}

	// A better candidate: the controller asks the holder to end its term,
	// then hands the Lease over once it expires.
	runCandidate(t, srv.Client, ns, "cand-130", lease, "1.33.0", "1.30.0")
	waitLease(t, srv.Client, ns, lease, 20*time.Second, "preferredHolder cand-130", func(l *coordinationv1.Lease) bool {
		return l.Spec.PreferredHolder != nil && *l.Spec.PreferredHolder == "cand-130" && holderOf(l) == "cand-131"
	})
	l = waitLease(t, srv.Client, ns, lease, 20*time.Second, "holder cand-130", func(l *coordinationv1.Lease) bool {
		return holderOf(l) == "cand-130"
	})
	if l.Spec.PreferredHolder != nil {
		t.Errorf("preferredHolder %q left after the hand-over", *l.Spec.PreferredHolder)
	}
	if got := l.Spec.LeaseTransitions; got == nil || *got <= transitions {
		t.Errorf("leaseTransitions %v after a hand-over, want more than %d", got, transitions)
	}
}

func TestCandidatesOfOtherLeasesAndStrategiesAreLeftAlone(t *testing.T) {
	srv := servertest.Start(t)
	const ns = "default"
	runCandidate(t, srv.Client, ns, "only", "lease-a", "1.33.0", "1.33.0")
	waitLease(t, srv.Client, ns, "lease-a", 20*time.Second, "holder only", func(l *coordinationv1.Lease) bool {
		return holderOf(l) == "only"
	})

	// A third-party strategy is some other controller's business.
	runCandidateWith(t, srv.Client, ns, "custom", "lease-b", "1.33.0", "1.33.0", "example.com/Custom")
	ctx := context.Background()
	deadline := time.Now().Add(3 * election.DefaultRequeueInterval / 2)
	for time.Now().Before(deadline) {
		c, err := srv.Client.CoordinationV1beta1().LeaseCandidates(ns).Get(ctx, "custom", metav1.GetOptions{})
		if err == nil && c.Spec.PingTime != nil {
			t.Errorf("candidate with a custom strategy was pinged at %v", c.Spec.PingTime)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := srv.Client.CoordinationV1().Leases(ns).Get(ctx, "lease-b", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("lease-b for a custom strategy: got err %v, want NotFound", err)
	}
}
