package server

// Health: /healthz, /livez and /readyz in kube-apiserver's format, their
// checks, and the store probe behind /readyz's store check (which the node
// lifecycle controller also reads). registerHealth is called by the API
// step (api.go); the probe runs with the background work (background.go);
// listen (listen.go) marks the server ready and shutdown (shutdown.go)
// unready.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/internal/controller/nodelifecycle"
	"github.com/leasehold/leasehold/internal/storage"
)

// pingCheck always holds: it answers that the process serves HTTP, as
// kube-apiserver's "ping" check.
var pingCheck = healthCheck{name: "ping", check: func() error { return nil }}

// registerHealth serves the health endpoints in kube-apiserver's format
// (serveHealth). /livez and /healthz fail only when the process itself is
// broken: restarting a replica cures no store outage, so the store is not
// one of their checks. /readyz also holds the store probe and fails (500,
// as kube-apiserver) while the store is unreachable or refuses writes, and
// from the start of shutdown, so that a load balancer sends no client
// there; ?verbose names the failing check and says why.
func registerHealth(mux *http.ServeMux, probe *storeProbe) *readiness {
	live := []healthCheck{pingCheck}
	for _, name := range []string{"healthz", "livez"} {
		mux.HandleFunc("/"+name, func(w http.ResponseWriter, r *http.Request) { serveHealth(w, r, name, live) })
	}
	ready := &readiness{checks: []healthCheck{pingCheck, probe.check()}}
	mux.HandleFunc("/readyz", ready.serve)
	return ready
}

// readiness backs /readyz: ready between start of serving and shutdown,
// while every check holds.
type readiness struct {
	ok     atomic.Bool
	checks []healthCheck
}

func (r *readiness) set(v bool) { r.ok.Store(v) }

func (r *readiness) serve(w http.ResponseWriter, req *http.Request) {
	shutdown := healthCheck{name: "shutdown", check: func() error {
		if !r.ok.Load() {
			return errShuttingDown
		}
		return nil
	}}
	serveHealth(w, req, "readyz", append([]healthCheck{shutdown}, r.checks...))
}

// healthCheck is one named condition of /readyz, as kube-apiserver's
// healthz checkers: nil when it holds, else why not.
type healthCheck struct {
	name  string
	check func() error
}

// storageCheck fails while the store refuses writes (a full or failing
// disk: storage.HealthReporter), so that a load balancer sends clients to
// a server that can write; reads still work meanwhile.
func storageCheck(s storage.Interface) healthCheck {
	hr, ok := s.(storage.HealthReporter)
	return healthCheck{name: "storage", check: func() error {
		if !ok {
			return nil
		}
		return hr.Health()
	}}
}

var errShuttingDown = errors.New("shutting down")

// serveHealth answers a health endpoint (name is "readyz") in
// kube-apiserver's format: "ok" (200) when every check holds, and with
// ?verbose one "[+]name ok" line per check and "name check passed". A
// failed check makes it a 500 listing every check, "[-]name failed:
// reason withheld" for the failed ones and "name check failed" last;
// ?verbose gives the reason instead of withholding it (kube-apiserver only
// logs it), since the operator of a full disk needs it and the endpoint is
// reachable by authenticated callers only.
func serveHealth(w http.ResponseWriter, r *http.Request, name string, checks []healthCheck) {
	_, verbose := r.URL.Query()["verbose"]
	var out strings.Builder
	failed := false
	for _, c := range checks {
		if err := c.check(); err != nil {
			failed = true
			reason := "reason withheld"
			if verbose {
				reason = err.Error()
			}
			fmt.Fprintf(&out, "[-]%s failed: %s\n", c.name, reason)
			continue
		}
		fmt.Fprintf(&out, "[+]%s ok\n", c.name)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	switch {
	case failed:
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(&out, "%s check failed\n", name)
		_, _ = w.Write([]byte(out.String()))
	case verbose:
		fmt.Fprintf(&out, "%s check passed\n", name)
		_, _ = w.Write([]byte(out.String()))
	default:
		_, _ = w.Write([]byte("ok"))
	}
}

// Store probe timings: kube-apiserver's etcd health check allows 2 s
// (--etcd-healthcheck-timeout); one probe a second keeps /readyz at most
// about three seconds behind the store.
const (
	storeProbeInterval = time.Second
	storeProbeTimeout  = 2 * time.Second
)

// storeProbe follows whether the store answers: every storeProbeInterval
// it reads the current revision (a quorum read on etcd) within
// storeProbeTimeout, and asks a storage.HealthReporter whether writes are
// accepted. /readyz reports the last result, so that a load balancer sends
// no client to a replica whose store is gone; the node lifecycle
// controller reads it (nodeLifecycleStatus) so that the store's outage is
// not taken for every node's. Run owns the only goroutine.
type storeProbe struct {
	store storage.Interface
	// name is the /readyz check's: "etcd", as kube-apiserver's, or
	// "storage" for the embedded store.
	name string

	mu      sync.Mutex
	err     error // the last probe's failure; nil while the store answers
	outages uint64
}

func newStoreProbe(store storage.Interface, onEtcd bool) *storeProbe {
	p := &storeProbe{store: store, name: "storage"}
	if onEtcd {
		p.name = "etcd"
	}
	return p
}

// run probes until ctx ends.
func (p *storeProbe) run(ctx context.Context) {
	t := time.NewTicker(storeProbeInterval)
	defer t.Stop()
	for {
		p.probe(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (p *storeProbe) probe(ctx context.Context) {
	pctx, cancel := context.WithTimeout(ctx, storeProbeTimeout)
	_, err := p.store.CurrentRevision(pctx)
	cancel()
	if ctx.Err() != nil {
		return // shutting down: not the store's fault
	}
	if err != nil {
		err = fmt.Errorf("reading the current revision: %w", err)
	} else if hr, ok := p.store.(storage.HealthReporter); ok {
		err = hr.Health()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil && p.err == nil {
		p.outages++
	}
	p.err = err
}

// check is the probe as a /readyz check: the last probe's failure, or
// else the store's own word on writes right now (storageCheck), so that a
// disk that fills is reported at once.
func (p *storeProbe) check() healthCheck {
	live := storageCheck(p.store)
	return healthCheck{name: p.name, check: func() error {
		p.mu.Lock()
		err := p.err
		p.mu.Unlock()
		if err != nil {
			return err
		}
		return live.check()
	}}
}

// nodeLifecycleStatus is the probe as nodelifecycle.Config.StoreStatus.
func (p *storeProbe) nodeLifecycleStatus() nodelifecycle.StoreStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	return nodelifecycle.StoreStatus{Down: p.err != nil, Outages: p.outages}
}
