package server

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/leasehold/leasehold/internal/apiserver"
	"github.com/leasehold/leasehold/internal/audit/logbackend"
	"github.com/leasehold/leasehold/internal/discovery"
	"github.com/leasehold/leasehold/internal/openapi"
	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/served"
	"github.com/leasehold/leasehold/internal/snapshot"
	"github.com/leasehold/leasehold/internal/storage"
)

// apiParts is the API as built, and what the later steps need of it.
type apiParts struct {
	server *apiserver.Server
	// ready is /readyz's switch: listen sets it, shutdown clears it.
	ready *readiness
	// stopWatches, closed by shutdown, ends every watch.
	stopWatches chan struct{}
	// auditLog is the audit log backend, nil when auditing is off. Its Run
	// is background work; Run closes it after the HTTP server drained and
	// the background work stopped.
	auditLog *logbackend.Backend
}

// openAPI builds the API: the served resources (the stored ones, and the
// access reviews unless the cluster answers them), OpenAPI, the
// non-resource paths (discovery, OpenAPI, metrics, profiling, snapshots,
// health), the auditor, and the request path (apiserver.New) over them.
func openAPI(cfg Config, reg *prometheus.Registry, store storage.Interface, probe *storeProbe, objs *objectLayer, acc *access) (*apiParts, error) {
	log := cfg.Logger
	resources := objs.stored
	if acc.reviews {
		resources = served.WithReviews(objs.stored, acc.Authorizer, acc.Rules)
	}
	oa, err := openapi.New(resources, discovery.DefaultVersionInfo().GitVersion)
	if err != nil {
		return nil, fmt.Errorf("building OpenAPI: %w", err)
	}
	mux, ready := nonResource(resources, oa, reg, store, probe, log)
	auditor, auditLog, err := newAuditor(cfg.Audit, objs.scheme, reg, log.With("component", "audit"))
	if err != nil {
		return nil, err
	}
	apiMetrics := apiserver.NewMetrics(reg)
	stopWatches := make(chan struct{})
	api, err := apiserver.New(apiserver.Config{
		Resources:     resources,
		Scheme:        objs.scheme,
		Store:         store,
		Cache:         objs.cache,
		Intern:        objs.intern,
		TypeConverter: oa.TypeConverter(),
		Authenticator: acc.authenticator,
		Authorizer:    acc.Authorizer,
		Admission:     acc.admission,
		Auditor:       auditor,
		Limits:        cfg.Limits,
		NonResource:   mux,
		Metrics:       apiMetrics,
		Finish:        apiserver.ObserveMetrics(apiMetrics, resources),
		Logger:        log.With("component", "apiserver"),
		StopWatches:   stopWatches,
		Timeout:       cfg.RequestTimeout,
	})
	if err != nil {
		if auditLog != nil {
			_ = auditLog.Close()
		}
		return nil, fmt.Errorf("building API server: %w", err)
	}
	return &apiParts{server: api, ready: ready, stopWatches: stopWatches, auditLog: auditLog}, nil
}

// nonResource is the mux of the paths that are not resources
// (apiserver.Config.NonResource), with /readyz's switch.
func nonResource(resources *registry.Set, oa *openapi.OpenAPI, reg *prometheus.Registry, store storage.Interface, probe *storeProbe, log *slog.Logger) (*http.ServeMux, *readiness) {
	mux := http.NewServeMux()
	discovery.New(resources, discovery.DefaultVersionInfo()).Register(mux)
	oa.Register(mux)
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	// Profiling, as kube-apiserver's --profiling (on by default): only
	// authenticated callers reach non-resource paths other than health.
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// The online backup (`leasehold snapshot save --kubeconfig`): a
	// consistent snapshot of the store, streamed to members of
	// system:masters (internal/snapshot.Handler).
	mux.Handle(snapshot.Path, snapshot.Handler(store, log.With("component", "snapshot")))
	return mux, registerHealth(mux, probe)
}

// newMetricsRegistry is the registry /metrics serves, with the Go runtime's
// and the process's collectors.
func newMetricsRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}
