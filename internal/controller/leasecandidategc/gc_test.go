package leasecandidategc_test

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/internal/controller/leasecandidategc"
	"github.com/leasehold/leasehold/internal/server/servertest"
)

// serverLister lists candidates from the server, standing in for the
// watch cache `serve` passes (same objects, read over the API).
func serverLister(t *testing.T, c kubernetes.Interface) leasecandidategc.Lister {
	return func() []*coordinationv1beta1.LeaseCandidate {
		l, err := c.CoordinationV1beta1().LeaseCandidates("").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Errorf("list candidates: %v", err)
			return nil
		}
		out := make([]*coordinationv1beta1.LeaseCandidate, len(l.Items))
		for i := range l.Items {
			out[i] = &l.Items[i]
		}
		return out
	}
}

func createCandidate(t *testing.T, c kubernetes.Interface, ns, name string, renewed time.Time) *coordinationv1beta1.LeaseCandidate {
	t.Helper()
	lc := &coordinationv1beta1.LeaseCandidate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: coordinationv1beta1.LeaseCandidateSpec{
			LeaseName: "some-lease", BinaryVersion: "1.33.0", EmulationVersion: "1.33.0",
			Strategy: coordinationv1.OldestEmulationVersion, RenewTime: &metav1.MicroTime{Time: renewed},
		},
	}
	out, err := c.CoordinationV1beta1().LeaseCandidates(ns).Create(context.Background(), lc, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create candidate %s: %v", name, err)
	}
	return out
}

func exists(t *testing.T, c kubernetes.Interface, ns, name string) bool {
	t.Helper()
	_, err := c.CoordinationV1beta1().LeaseCandidates(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("get candidate %s: %v", name, err)
	}
	return err == nil
}

func logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func TestCollectDeletesOnlyExpired(t *testing.T) {
	srv := servertest.Start(t)
	now := time.Now()
	createCandidate(t, srv.Client, "kube-system", "old_1", now.Add(-31*time.Minute))
	createCandidate(t, srv.Client, "default", "old-2", now.Add(-2*time.Hour))
	createCandidate(t, srv.Client, "kube-system", "fresh", now.Add(-29*time.Minute))

	gc := leasecandidategc.NewWithLister(serverLister(t, srv.Client), srv.Client, logger(), nil, leasecandidategc.Config{})
	n, err := gc.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("deleted %d, want 2", n)
	}
	if exists(t, srv.Client, "kube-system", "old_1") || exists(t, srv.Client, "default", "old-2") {
		t.Error("an expired candidate survived")
	}
	if !exists(t, srv.Client, "kube-system", "fresh") {
		t.Error("a candidate renewed 29 minutes ago was deleted (validity is 30 minutes)")
	}
}

// The cache may lag: a candidate that looks expired there but was renewed
// on the server must be kept.
func TestCollectRechecksTheServer(t *testing.T) {
	srv := servertest.Start(t)
	stale := createCandidate(t, srv.Client, "default", "renewed", time.Now().Add(-time.Hour))
	renewed := stale.DeepCopy()
	renewed.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	if _, err := srv.Client.CoordinationV1beta1().LeaseCandidates("default").Update(context.Background(), renewed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	laggingCache := func() []*coordinationv1beta1.LeaseCandidate { return []*coordinationv1beta1.LeaseCandidate{stale} }
	gc := leasecandidategc.NewWithLister(laggingCache, srv.Client, logger(), nil, leasecandidategc.Config{})
	if n, err := gc.Collect(context.Background()); err != nil || n != 0 {
		t.Errorf("Collect = %d, %v; want 0 deletions", n, err)
	}
	if !exists(t, srv.Client, "default", "renewed") {
		t.Error("a candidate renewed on the server was deleted from a stale read")
	}
}

func TestRunCollectsEveryPeriod(t *testing.T) {
	srv := servertest.Start(t)
	createCandidate(t, srv.Client, "default", "short-lived", time.Now())
	cfg := leasecandidategc.Config{Period: 100 * time.Millisecond, Validity: 500 * time.Millisecond}
	gc := leasecandidategc.NewWithLister(serverLister(t, srv.Client), srv.Client, logger(), nil, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := gc.Run(ctx); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	defer func() { cancel(); wg.Wait() }()

	start := time.Now()
	for exists(t, srv.Client, "default", "short-lived") {
		if time.Since(start) > 10*time.Second {
			t.Fatal("candidate not collected within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if d := time.Since(start); d < cfg.Validity-50*time.Millisecond {
		t.Errorf("collected after %v, before its validity %v ran out", d, cfg.Validity)
	}
}
