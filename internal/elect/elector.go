package elect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	rl "k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

const (
	// releaseTimeout bounds the release write when stopping the command
	// used up client-go's own release deadline.
	releaseTimeout = 5 * time.Second
	// eventFlushTimeout bounds the wait for the last event at exit.
	eventFlushTimeout = 2 * time.Second
	// healthzTolerance is how long past the lease duration a leader that
	// failed to renew still reports healthy. kube-controller-manager allows
	// 20 s; elect allows none, so /healthz fails as soon as another
	// candidate may have taken the lease over while we still run the command.
	healthzTolerance = 0
)

// stopReason says why the command was (or is being) stopped; the first
// reason recorded wins.
type stopReason int

const (
	reasonNone stopReason = iota
	reasonShutdown
	reasonLost
	reasonExited
	reasonStartFailed
)

// Elector runs a command while holding a lease. Build one with New and
// call Run once.
type Elector struct {
	cfg Config

	mu        sync.Mutex
	reason    stopReason
	proc      *process
	procCode  int   // exit code of the command (reasonExited)
	failure   error // why the command could not start (reasonStartFailed)
	startCode int
	token     int64
}

// New validates cfg and returns an Elector.
func New(cfg Config) (*Elector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid elect configuration: %w", err)
	}
	return &Elector{cfg: cfg}, nil
}

// leaseRef is the NS/NAME form given to the command.
func (e *Elector) leaseRef() string { return e.cfg.Namespace + "/" + e.cfg.Name }

// Run campaigns for the lease until ctx is cancelled, the command exits, or
// leadership is lost, and returns the exit code for the process (see the
// Exit constants) with an error explaining any non-zero code.
func (e *Elector) Run(ctx context.Context) (int, error) {
	log := e.cfg.Logger.With("lease", e.leaseRef(), "identity", e.cfg.Identity)
	if code, err := e.preflight(ctx); err != nil || ctx.Err() != nil {
		return code, err
	}

	// client-go logs through the logger in its context.
	logCtx := klog.NewContext(context.WithoutCancel(ctx), logr.FromSlogHandler(log.Handler()))
	events := newEventRecorder(logCtx, e.cfg.Client, e.cfg.Namespace, log)
	lock := newTrackingLock(&rl.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: e.cfg.Namespace, Name: e.cfg.Name},
		Client:     e.cfg.Client.CoordinationV1(),
		LockConfig: rl.ResourceLockConfig{Identity: e.cfg.Identity, EventRecorder: events.recorder},
	}, func() { e.stopCommand(reasonLost) })
	defer func() { events.shutdown(lock.recordedEvents(), eventFlushTimeout) }()

	// The election's context is not ctx: on a signal the command is stopped
	// first, while client-go keeps renewing, and only then is the election
	// cancelled (which releases the lease).
	var wg sync.WaitGroup
	defer wg.Wait() // after cancelElect below: the goroutines end with it
	electCtx, cancelElect := context.WithCancel(logCtx)
	defer cancelElect()

	// In coordinated election the candidate is withdrawn before the lease
	// is released, so that the controller does not hand the released
	// lease straight back to this (departing) elector.
	withdraw := func() {}
	if co := e.cfg.Coordinated; co != nil {
		cy, err := startCandidacy(logCtx, e.cfg.Client, e.cfg.Namespace, e.cfg.Identity, e.cfg.Name, co, log)
		if err != nil {
			return ExitUsage, err
		}
		withdraw = cy.withdraw
		defer cy.withdraw()
		lock.endTerm = func(preferred string) {
			log.Info("end of term: handing the lease over", "preferredHolder", preferred)
			e.stopCommand(reasonLost)
			withdraw()
			cancelElect()
		}
	}

	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-ctx.Done():
			log.Info("stopping on signal")
			e.stopCommand(reasonShutdown)
			withdraw()
			cancelElect()
		case <-electCtx.Done():
		}
	}()

	watch, err := startLeaseWatch(logCtx, e.cfg.watchClient(), e.cfg.Namespace, e.cfg.Name, e.cfg.Identity, e.cfg.Coordinated != nil, lock.wake, log)
	if err != nil {
		return ExitUsage, fmt.Errorf("watch lease %s: %w", e.leaseRef(), err)
	}
	defer watch.stop() // after le.Run: no read or write is in flight

	watchdog := leaderelection.NewLeaderHealthzAdaptor(healthzTolerance)
	leadDone := make(chan struct{})
	lec := leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   e.cfg.LeaseDuration,
		RenewDeadline:   e.cfg.RenewDeadline,
		RetryPeriod:     e.cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Coordinated:     e.cfg.Coordinated != nil,
		WatchDog:        watchdog,
		Name:            e.leaseRef(),
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) {
				defer close(leadDone)
				e.lead(leadCtx, lock, log)
				withdraw()
				cancelElect()
			},
			// Every campaign round ends with this call; only one leads.
			OnStoppedLeading: func() {
				if _, acquired := lock.acquisitionRecord(); acquired {
					log.Info("stopped leading")
				}
			},
			OnNewLeader: func(id string) { log.Info("new leader observed", "leader", id) },
		},
	}
	le, err := leaderelection.NewLeaderElector(lec)
	if err != nil {
		return ExitUsage, fmt.Errorf("configure leader election: %w", err)
	}
	if l := e.cfg.HealthListener; l != nil {
		srv := &http.Server{Handler: healthHandler(watchdog, e.leading), ReadHeaderTimeout: 5 * time.Second}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("health server stopped", "err", err)
			}
		}()
		defer func() { _ = srv.Close() }()
	}

	log.Info("campaigning", "coordinated", e.cfg.Coordinated != nil, "leaseDuration", e.cfg.LeaseDuration, "renewDeadline", e.cfg.RenewDeadline, "retryPeriod", e.cfg.RetryPeriod)
	if err := campaign(electCtx, lock, lec, le, watchdog); err != nil {
		return ExitUsage, err
	}
	// client-go starts OnStartedLeading in a goroutine of its own and does
	// not wait for it; it was started iff the lease was acquired (the
	// first successful write ends the acquire loop with success).
	if _, acquired := lock.acquisitionRecord(); acquired {
		<-leadDone
	} else {
		// A signal may have cut off an acquiring write the server applied
		// (unsure.go): the lease must not stay held by an elector leaving.
		rctx, cancel := context.WithTimeout(logCtx, releaseTimeout)
		released, err := lock.releaseUnsure(rctx)
		cancel()
		switch {
		case err != nil:
			log.Warn("could not check or release the lease after an unanswered acquiring write", "err", err)
		case released:
			log.Info("released the lease an unanswered acquiring write had taken")
		}
	}
	// Leadership can end without the release hook having run (the server
	// was unreachable for the release): the command must still stop.
	e.stopCommand(reasonLost)
	return e.result()
}

// preflight reads the lease once so that an unreachable server or rejected
// credentials end the elector with a clear code instead of client-go
// retrying forever. A missing lease is fine: the elector creates it.
func (e *Elector) preflight(ctx context.Context) (int, error) {
	pctx, cancel := context.WithTimeout(ctx, e.cfg.RenewDeadline)
	defer cancel()
	_, err := e.cfg.Client.CoordinationV1().Leases(e.cfg.Namespace).Get(pctx, e.cfg.Name, metav1.GetOptions{})
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return ExitOK, nil
	case ctx.Err() != nil:
		return ExitOK, nil
	case apierrors.IsUnauthorized(err), apierrors.IsForbidden(err):
		return ExitConfig, fmt.Errorf("read lease %s: %w", e.leaseRef(), err)
	default:
		return ExitUnavailable, fmt.Errorf("read lease %s: %w", e.leaseRef(), err)
	}
}

// lead runs the command for one term of leadership: it obtains the fencing
// token, starts the command, and returns once the command has stopped
// because it exited, leadership ended (leadCtx), or stopCommand was called.
func (e *Elector) lead(leadCtx context.Context, lock *trackingLock, log *slog.Logger) {
	acq, _ := lock.acquisitionRecord()
	token, err := fencingToken(leadCtx, e.cfg.Client, e.cfg.Namespace, e.cfg.Name, e.cfg.Identity, acq, e.cfg.RetryPeriod)
	if err != nil {
		log.Error("no fencing token; not starting the command", "err", err)
		e.stopCommand(reasonLost)
		return
	}
	env := commandEnv(os.Environ(), e.cfg.Identity, e.leaseRef(), token)
	proc, started := e.startCommand(env, token)
	if !started {
		return
	}
	log.Info("leading; command started", "fencingToken", token, "pid", proc.Pid())
	select {
	case <-proc.Done():
		e.stopCommand(reasonExited)
	case <-leadCtx.Done():
		e.stopCommand(reasonLost)
	}
	log.Info("command stopped", "exitCode", proc.ExitCode())
}

// startCommand starts the command unless a stop was already decided; the
// decision and the start happen under one lock so that a concurrent stop
// either prevents the start or sees the process.
func (e *Elector) startCommand(env []string, token int64) (*process, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.reason != reasonNone {
		return nil, false
	}
	proc, err := startProcess(e.cfg.Command, env, e.cfg.Stdout, e.cfg.Stderr)
	if err != nil {
		e.reason = reasonStartFailed
		e.failure = err
		e.startCode = ExitCannotExecute
		var se *startError
		if errors.As(err, &se) {
			e.startCode = se.code
		}
		return nil, false
	}
	e.proc = proc
	e.token = token
	return proc, true
}

// stopCommand records reason if none was recorded yet and stops the command
// if it runs, returning once it has exited.
func (e *Elector) stopCommand(reason stopReason) {
	e.mu.Lock()
	if e.reason == reasonNone {
		e.reason = reason
	}
	proc := e.proc
	e.mu.Unlock()
	if proc == nil {
		return
	}
	proc.Stop(e.cfg.GracePeriod)
	e.mu.Lock()
	e.procCode = proc.ExitCode()
	e.mu.Unlock()
}

// leading reports whether the command runs as leader and no stop began.
func (e *Elector) leading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.proc == nil || e.reason != reasonNone {
		return false
	}
	select {
	case <-e.proc.Done():
		return false
	default:
		return true
	}
}

// result maps the stop reason to the exit code.
func (e *Elector) result() (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch e.reason {
	case reasonShutdown, reasonNone:
		return ExitOK, nil
	case reasonExited:
		if e.procCode == 0 {
			return ExitOK, nil
		}
		return e.procCode, fmt.Errorf("command exited with code %d", e.procCode)
	case reasonStartFailed:
		return e.startCode, e.failure
	default:
		return ExitLeadershipLost, fmt.Errorf("leadership of lease %s lost", e.leaseRef())
	}
}
