package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/leasehold/leasehold/internal/storage"
)

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
