package server

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	rl "k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/leasehold/leasehold/internal/bootstrappolicy"
	"github.com/leasehold/leasehold/internal/controller"
)

// The Leases the replicas elect on, in kube-system.
const (
	// ControllerManagerLease is kube-controller-manager's lock, under
	// Leasehold's name.
	ControllerManagerLease = bootstrappolicy.ControllerManagerLease
	// ElectionControllerLease is the lock kube-apiserver elects its
	// coordinated leader election controller on.
	ElectionControllerLease = "leader-election-controller"
)

// electedControllers runs a set of controllers only while this replica
// holds a Lease, using client-go's leaderelection with kube-controller-
// manager's identity format <hostname>_<uuid>.
//
// Invariant: the controllers of one term have all returned before this
// replica gives up the Lease, and, when the Lease is lost, before another
// replica can take it (within LeaseDuration − RenewDeadline of noticing);
// a controller that does not stop in that time ends the process, as
// kube-controller-manager exits on "leaderelection lost". Shutdown stops
// the controllers while the Lease is still renewed, then releases it
// (holderIdentity "", ReleaseOnCancel) so another replica takes over at
// once. After a lost term the replica campaigns again with new controllers.
type electedControllers struct {
	lease    string
	identity string
	client   kubernetes.Interface
	timing   ReplicaConfig
	// build makes the controllers of one term.
	build func() ([]controller.Runner, error)
	log   *slog.Logger
	// exit ends the process (os.Exit) when controllers cannot be stopped
	// in time.
	exit func(code int)
}

// newIdentity is kube-controller-manager's election identity: the hostname
// and a uuid that keeps two processes on one host apart.
func newIdentity(hostname string) string { return hostname + "_" + string(uuid.NewUUID()) }

func (e *electedControllers) Name() string { return "leader-election/" + e.lease }

// Run campaigns, leads and campaigns again until ctx ends; it returns once
// the last term's controllers have stopped and the Lease is released.
func (e *electedControllers) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		if err := e.term(ctx); err != nil {
			return err
		}
	}
	return nil
}

// term campaigns once and returns when leadership has ended (or ctx ended
// before it began), with every controller of the term stopped.
func (e *electedControllers) term(ctx context.Context) error {
	runners, err := e.build()
	if err != nil {
		return err
	}
	log := e.log.With("lease", metav1.NamespaceSystem+"/"+e.lease, "identity", e.identity)
	t := &leadership{grace: e.timing.LeaseDuration - e.timing.RenewDeadline, log: log, exit: e.exit}
	// client-go logs through the logger in its context. The election's
	// context is not ctx: on shutdown the controllers stop first, while
	// client-go keeps renewing, and only then is the election cancelled
	// (which releases the Lease).
	logCtx := klog.NewContext(context.WithoutCancel(ctx), logr.FromSlogHandler(log.Handler()))
	electCtx, cancelElect := context.WithCancel(logCtx)
	defer cancelElect()
	lock := &termLock{
		Interface: &rl.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: e.lease},
			Client:     e.client.CoordinationV1(),
			LockConfig: rl.ResourceLockConfig{Identity: e.identity},
		},
		term: t,
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   e.timing.LeaseDuration,
		RenewDeadline:   e.timing.RenewDeadline,
		RetryPeriod:     e.timing.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            e.lease,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) { t.lead(leadCtx, runners) },
			OnStoppedLeading: func() {},
			OnNewLeader:      func(id string) { log.Info("leader observed", "leader", id) },
		},
	})
	if err != nil {
		return fmt.Errorf("leader election on %s: %w", e.lease, err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		select {
		case <-ctx.Done():
			t.stop("shutting down")
			cancelElect()
		case <-electCtx.Done():
		}
	})
	le.Run(electCtx)
	// Leadership is over (lost, or released on shutdown), or never began.
	t.stop("leadership lost")
	cancelElect()
	return nil
}

// leadership is one term's controllers: started once the Lease is held,
// stopped (and waited for) before it is given up.
type leadership struct {
	grace time.Duration
	log   *slog.Logger
	exit  func(int)

	mu       sync.Mutex
	stopping bool
	cancel   context.CancelFunc
	done     chan struct{} // closed when every controller has returned
}

// lead runs the controllers until leadCtx ends or stop is called; it is
// client-go's OnStartedLeading, which client-go runs in a goroutine of its
// own, so it first checks that the term has not already ended.
func (t *leadership) lead(leadCtx context.Context, runners []controller.Runner) {
	t.mu.Lock()
	if t.stopping {
		t.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(leadCtx)
	t.cancel, t.done = cancel, make(chan struct{})
	t.mu.Unlock()
	defer close(t.done)
	defer cancel()
	t.log.Info("became leader; starting controllers", "controllers", len(runners))
	var wg sync.WaitGroup
	for _, r := range runners {
		wg.Go(func() {
			if err := r.Run(ctx); err != nil && ctx.Err() == nil {
				t.log.Error("controller stopped", "controller", r.Name(), "err", err)
			}
		})
	}
	wg.Wait()
}

// leading reports whether controllers were started in this term.
func (t *leadership) leading() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.done != nil
}

// stop ends the term: controllers not yet started never start, running
// ones are cancelled and waited for. If they have not all returned within
// the grace period another replica may already run its own, so the
// process exits. stop may be called any number of times, concurrently.
func (t *leadership) stop(why string) {
	t.mu.Lock()
	first := !t.stopping
	t.stopping = true
	cancel, done := t.cancel, t.done
	t.mu.Unlock()
	if done == nil {
		return
	}
	cancel()
	timer := time.NewTimer(t.grace)
	defer timer.Stop()
	select {
	case <-done:
		if first {
			t.log.Info("stopped leading; controllers stopped", "reason", why)
		}
	case <-timer.C:
		t.log.Error("leaderelection lost: controllers did not stop in time; exiting", "reason", why, "grace", t.grace)
		t.exit(1)
	}
}

// termLock is client-go's LeaseLock, with two guards around the term's
// controllers:
//   - a release (an Update that clears holderIdentity, which client-go
//     writes as soon as its renew loop ends) is written only after the
//     controllers have stopped, so no other replica can start while they
//     still run;
//   - a read that shows another holder while this replica leads proves
//     leadership is lost: the controllers stop at once instead of when the
//     renew deadline runs out.
type termLock struct {
	rl.Interface
	term *leadership
}

func (l *termLock) Get(ctx context.Context) (*rl.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	if err == nil && rec.HolderIdentity != l.Identity() && l.term.leading() {
		l.term.stop("lease held by " + rec.HolderIdentity)
	}
	return rec, raw, err
}

func (l *termLock) Update(ctx context.Context, rec rl.LeaderElectionRecord) error {
	if rec.HolderIdentity == "" {
		l.term.stop("releasing the lease")
	}
	return l.Interface.Update(ctx, rec)
}
