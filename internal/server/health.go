package server

import "net/http"

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
