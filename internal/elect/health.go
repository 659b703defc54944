package elect

import (
	"fmt"
	"net/http"

	"k8s.io/client-go/tools/leaderelection"
)

// healthHandler serves /healthz from client-go's HealthzAdaptor, which
// fails once this process believes it leads but has not renewed for longer
// than the lease duration plus the adaptor's tolerance (the stuck-leader
// case of kubernetes issue 82960), and /readyz, which answers 200 only
// while this process leads and runs the command, so that a load balancer
// or probe can route to the leader.
func healthHandler(adaptor *leaderelection.HealthzAdaptor, leading func() bool) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := adaptor.Check(r); err != nil {
			http.Error(w, fmt.Sprintf("%s check failed: %v", adaptor.Name(), err), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if !leading() {
			http.Error(w, "not leading", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "leading")
	})
	return mux
}
