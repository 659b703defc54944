package etcd

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// TestFailsOverFromASilentMember: the member the driver is connected to
// goes silent (its link holds every byte but stays open, as behind a
// partition that drops packets) while the other two answer. gRPC alone
// would wait for keepalive (40 s) or TCP; the leader check sees the member
// not answering and moves to one that does, so requests succeed again
// within two status timeouts.
func TestFailsOverFromASilentMember(t *testing.T) {
	if testing.Short() {
		t.Skip("an etcd cluster and a 10 s partition; not in -short")
	}
	bin := testdeps.Debian(t, "etcd-server", "etcd")
	members, _ := startDebianCluster(t, bin, 3)
	gates := map[string]*gate{}
	var endpoints []string
	for _, m := range members {
		g := startGate(t, hostOf(m))
		ep := "http://" + g.ln.Addr().String()
		gates[ep] = g
		endpoints = append(endpoints, ep)
	}
	ctx := testContext(t)
	s, err := New(ctx, Config{Endpoints: endpoints, leaderCheck: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	rev, err := s.Create(ctx, "/registry/k/a", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	// pick-first is on the first endpoint, the leader's (preferLeader).
	silent := s.Client().Endpoints()[0]
	gates[silent].hold(true)
	defer gates[silent].hold(false)
	start := time.Now()
	limit := 2*statusTimeout + 5*time.Second
	for {
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		rev2, err := s.Update(wctx, "/registry/k/a", rev, []byte("v"))
		cancel()
		if err == nil {
			rev = rev2
			break
		}
		if time.Since(start) > limit {
			t.Fatalf("%v after %s went silent, writes still fail: %v", limit, silent, err)
		}
	}
	took := time.Since(start)
	if got := s.Client().Endpoints(); len(got) != len(endpoints) || got[0] == silent {
		t.Errorf("endpoints %v, want all %d with another than the silent %s first", got, len(endpoints), silent)
	}
	if _, err := s.CurrentRevision(ctx); err != nil {
		t.Errorf("a read after failing over: %v", err)
	}
	t.Logf("writes succeeded again %v after the member went silent (rev %d)", took.Round(time.Millisecond), rev)
}
