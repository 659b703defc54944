package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

const (
	// durabilityWriters write concurrently, half over protobuf.
	durabilityWriters = 16
	// leasesPerWriter are the leases each writer owns.
	leasesPerWriter = 4
	// killRounds is how many times the server is killed under load.
	killRounds = 4
)

// TestDurabilityKill9 crashes the server with SIGKILL under concurrent
// writes, restarts it on the same data dir, and checks that every
// acknowledged write survived, nothing else changed, lists decode and agree,
// and a watch from before the crash replays or answers 410 cleanly.
func TestDurabilityKill9(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dataDir := filepath.Join(t.TempDir(), "data")
	writers := newLeaseWriters(seed)

	var fromRV int64
	acked, landed, replays := 0, 0, 0
	for round := 0; round <= killRounds; round++ {
		p := startServerIn(t, dataDir)
		c := newLeaseClients(t, p.Kubeconfig)
		if round > 0 {
			landed += reconcile(ctx, t, c, writers)
			if checkWatchReplay(ctx, t, c.pick(round), fromRV, writers) {
				replays++
			}
		}
		fromRV = checkLists(ctx, t, c, writers)
		if lines := errorLines(p.Output()); len(lines) > 0 {
			t.Errorf("restarted server logged errors:\n%s", strings.Join(lines, "\n"))
		}
		if t.Failed() || round == killRounds {
			c.closeIdle()
			break
		}
		load := startLoad(ctx, c, writers)
		time.Sleep(500*time.Millisecond + time.Duration(rng.IntN(1500))*time.Millisecond)
		load.stopping.Store(true)
		p.Kill()
		if err := load.wait(); err != nil {
			t.Fatal(err)
		}
		c.closeIdle()
		n := roundAcks(writers)
		acked += n
		if n == 0 {
			t.Fatalf("round %d: no write was acknowledged before the kill", round)
		}
	}
	t.Logf("%d rounds: %d acknowledged writes, %d unacknowledged in-flight writes found after restart, %d watches replayed (others 410)",
		killRounds, acked, landed, replays)
}

// TestGracefulShutdownUnderLoad sends SIGTERM while writers and watches are
// busy: the server must exit 0, end every watch as a clean end of stream,
// and keep every acknowledged write.
func TestGracefulShutdownUnderLoad(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dataDir := filepath.Join(t.TempDir(), "data")
	writers := newLeaseWriters(seed)

	p := startServerIn(t, dataDir)
	c := newLeaseClients(t, p.Kubeconfig)
	fromRV := checkLists(ctx, t, c, writers)
	var watchers []*watchCollector
	for i := range 4 {
		wi, err := c.pick(i).CoordinationV1().Leases(durabilityNamespace).Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(fromRV, 10)})
		if err != nil {
			t.Fatalf("watch %d: %v", i, err)
		}
		watchers = append(watchers, collectWatch(wi))
	}
	load := startLoad(ctx, c, writers)
	time.Sleep(time.Second)
	load.stopping.Store(true)
	stopped := time.Now()
	p.Stop() // fails the test unless the exit status is 0
	t.Logf("SIGTERM to exit: %v", time.Since(stopped))
	if err := load.wait(); err != nil {
		t.Fatal(err)
	}
	c.closeIdle()
	for i, w := range watchers {
		events, err := w.result(15 * time.Second)
		if err != nil {
			t.Errorf("watch %d: %v", i, err)
		}
		t.Logf("watch %d: %d events before the stream ended", i, events)
	}
	acked := roundAcks(writers)
	if acked == 0 {
		t.Fatal("no write was acknowledged before SIGTERM")
	}

	p2 := startServerIn(t, dataDir)
	c2 := newLeaseClients(t, p2.Kubeconfig)
	landed := reconcile(ctx, t, c2, writers)
	checkLists(ctx, t, c2, writers)
	t.Logf("%d acknowledged writes kept, %d unacknowledged in-flight writes also landed", acked, landed)
}

func newLeaseWriters(seed uint64) []*leaseWriter {
	writers := make([]*leaseWriter, durabilityWriters)
	for i := range writers {
		writers[i] = newLeaseWriter(i, leasesPerWriter, seed)
	}
	return writers
}

// roundAcks counts the acknowledged writes of the round that just ended.
func roundAcks(writers []*leaseWriter) int {
	n := 0
	for _, w := range writers {
		n += len(w.round)
	}
	return n
}

// load is the writers running against one server process.
type load struct {
	stopping *atomic.Bool
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	errs     chan error
}

// startLoad starts every writer (even ids over JSON, odd over protobuf) on
// its own goroutine, owned by the returned load until wait.
func startLoad(ctx context.Context, c *leaseClients, writers []*leaseWriter) *load {
	ctx, cancel := context.WithCancel(ctx)
	l := &load{stopping: &atomic.Bool{}, cancel: cancel, errs: make(chan error, len(writers))}
	for _, w := range writers {
		w.round = w.round[:0]
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			if err := w.run(ctx, c.pick(w.id), l.stopping); err != nil {
				l.errs <- err
			}
		}()
	}
	return l
}

// wait ends the writers (the server is already gone or going) and returns
// the first error a writer met while the server was up.
func (l *load) wait() error {
	done := make(chan struct{})
	go func() {
		l.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		// The writers' requests fail fast once the server is gone; give
		// them a bounded time before cancelling what is left.
	}
	l.cancel()
	<-done
	close(l.errs)
	return <-l.errs
}

// watchCollector drains one watch until its channel closes.
type watchCollector struct {
	w      watch.Interface
	done   chan struct{}
	events int
	err    error
}

func collectWatch(w watch.Interface) *watchCollector {
	wc := &watchCollector{w: w, done: make(chan struct{})}
	go func() {
		defer close(wc.done)
		prev := int64(0)
		for ev := range w.ResultChan() {
			if wc.err != nil {
				continue
			}
			if ev.Type == watch.Error {
				wc.err = fmt.Errorf("error event before the stream ended: %v", apierrors.FromObject(ev.Object))
				continue
			}
			l, ok := ev.Object.(*coordinationv1.Lease)
			if !ok {
				wc.err = fmt.Errorf("%s event carries %T", ev.Type, ev.Object)
				continue
			}
			rv, err := strconv.ParseInt(l.ResourceVersion, 10, 64)
			if err != nil || rv <= prev {
				wc.err = fmt.Errorf("%s event %s has rv %q after %d", ev.Type, l.Name, l.ResourceVersion, prev)
				continue
			}
			prev = rv
			wc.events++
		}
	}()
	return wc
}

// result waits up to d for the stream to end and returns the events seen
// and the first problem, if any. A stream still open after d is stopped
// and reported.
func (wc *watchCollector) result(d time.Duration) (int, error) {
	select {
	case <-wc.done:
		return wc.events, wc.err
	case <-time.After(d):
		wc.w.Stop()
		<-wc.done
		return wc.events, fmt.Errorf("the watch channel did not close within %v of the server's exit", d)
	}
}
