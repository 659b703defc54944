package agent

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// renewLog collects what Config.OnRenew observed.
type renewLog struct {
	mu       sync.Mutex
	ok       int
	failed   int
	lastErr  error
	shortest time.Duration
}

func (r *renewLog) observe(d time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.failed++
		r.lastErr = err
		return
	}
	if r.ok == 0 || d < r.shortest {
		r.shortest = d
	}
	r.ok++
}

func (r *renewLog) counts() (ok, failed int, shortest time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ok, r.failed, r.shortest
}

// TestE2EOnRenewObservesEveryRenewal: the hook sees each successful PUT with
// its (real, positive) duration, and a PUT that fails because the lease was
// deleted under the agent, after which renewals succeed again.
func TestE2EOnRenewObservesEveryRenewal(t *testing.T) {
	e := newE2EEnv(t)
	node := e.newNode("onrenew")
	cfg := e2eConfig(node)
	cfg.LeaseDurationSeconds = 1 // a renewal every 250 ms
	rl := &renewLog{}
	cfg.OnRenew = rl.observe
	e.startAgent(t, cfg)

	testdeps.Eventually(t, 20*time.Second, 100*time.Millisecond, "two renewals observed", func(context.Context) error {
		if ok, _, _ := rl.counts(); ok < 2 {
			return fmt.Errorf("%d renewals observed", ok)
		}
		return nil
	})
	ok, failed, shortest := rl.counts()
	if failed != 0 || shortest <= 0 {
		t.Fatalf("before the deletion: %d failures observed (last %v), shortest renewal %v; want none and a positive duration", failed, rl.lastErr, shortest)
	}

	ctx := context.Background()
	if err := e.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, node, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The next PUT carries the deleted lease's uid and resourceVersion: it
	// fails (409, or 404 on servers that say so), and the agent recreates
	// the lease and goes on renewing it.
	testdeps.Eventually(t, 20*time.Second, 100*time.Millisecond, "a failed renewal, then renewals again", func(context.Context) error {
		nowOK, nowFailed, _ := rl.counts()
		if nowFailed == 0 || nowOK < ok+2 {
			return fmt.Errorf("%d failures and %d renewals since the deletion", nowFailed, nowOK-ok)
		}
		return nil
	})
}
