package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/internal/apiserver"
	"github.com/leasehold/leasehold/internal/authn"
	"github.com/leasehold/leasehold/internal/connguard"
	"github.com/leasehold/leasehold/internal/controller"
	"github.com/leasehold/leasehold/internal/controller/namespaces"
	"github.com/leasehold/leasehold/internal/controller/rbacbootstrap"
	"github.com/leasehold/leasehold/internal/discovery"
	"github.com/leasehold/leasehold/internal/intern"
	"github.com/leasehold/leasehold/internal/objects"
	"github.com/leasehold/leasehold/internal/openapi"
	"github.com/leasehold/leasehold/internal/registry"
	nsregistry "github.com/leasehold/leasehold/internal/registry/namespace"
	"github.com/leasehold/leasehold/internal/watchcache"
)

// Run serves until ctx ends, then shuts down gracefully: it stops accepting,
// ends watches, lets in-flight requests finish, stops the controllers and the
// cache, and closes the store.
func Run(ctx context.Context, cfg Config) error {
	cfg.defaults()
	log := cfg.Logger
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("creating data dir: %w", err)
	}
	tlsConfig, ca, err := setupTLS(cfg)
	if err != nil {
		return err
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	storeMetrics := newStorageMetrics(reg)
	store, err := openStorage(ctx, cfg, storeMetrics)
	if err != nil {
		return err
	}
	defer func() {
		if err := store.Close(); err != nil {
			log.Error("closing storage", "err", err)
		}
	}()

	scheme, err := registry.NewScheme()
	if err != nil {
		return err
	}
	// Behind a cluster (cluster.go), the cluster authenticates, authorizes
	// and keeps everything but the leases.
	cl, err := openCluster(cfg, log)
	if err != nil {
		return err
	}
	// The watch cache holds the stored resources; the access reviews,
	// which answer with the authorizer and store nothing, join them in the
	// set the API serves once the authorizer (which reads RBAC objects from
	// the cache) exists.
	stored := Resources(time.Now)
	if cl != nil {
		stored = ClusterResources(time.Now)
	}
	apiMetrics := apiserver.NewMetrics(reg)
	// One intern table for the cache's decoder and the API server, which
	// hands the objects it writes to the cache interned (Config.Intern).
	table := intern.New()
	cache := watchcache.New(store, objects.NewForm(scheme, stored, table).CacheOptions(watchcache.Options{
		Prefix:           "/registry/",
		ColdAfter:        cfg.WatchCacheColdAfter,
		Window:           cfg.WatchCacheWindow,
		BookmarkInterval: cfg.BookmarkInterval,
		WatcherBuffer:    1000,
		Logger:           log,
	}))
	var authorizer *authorizationChain
	if cl != nil {
		authorizer, err = newClusterAuthorization(cfg, cl, log)
	} else {
		authorizer, err = newAuthorization(cfg, cache, store, stored, log)
	}
	if err != nil {
		return fmt.Errorf("authorization: %w", err)
	}
	// Behind a cluster the access reviews are the cluster's to answer.
	resources := stored
	if cl == nil {
		resources = servedResources(stored, authorizer.Chain)
	}
	oa, err := openapi.New(resources, discovery.DefaultVersionInfo().GitVersion)
	if err != nil {
		return fmt.Errorf("building OpenAPI: %w", err)
	}

	mux := http.NewServeMux()
	discovery.New(resources, discovery.DefaultVersionInfo()).Register(mux)
	oa.Register(mux)
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	// Profiling, as kube-apiserver's --profiling (on by default): only
	// authenticated callers reach non-resource paths other than health.
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	registerSnapshot(mux, store, log)
	probe := newStoreProbe(store, len(cfg.EtcdServers) > 0)
	ready := registerHealth(mux, probe)

	var delegated authn.Authenticator
	if cl != nil {
		delegated = cl.Authenticator()
	}
	authenticator, err := newAuthenticator(cfg, tlsConfig.ClientCAs, delegated)
	if err != nil {
		return fmt.Errorf("authentication: %w", err)
	}
	auditor, auditLog, err := newAuditor(cfg.Audit, scheme, reg, log.With("component", "audit"))
	if err != nil {
		return err
	}
	if auditLog != nil {
		// Closed last: after the HTTP server drained and the backend's
		// Run (below, with the background work) wrote what it buffered.
		defer func() {
			if err := auditLog.Close(); err != nil {
				log.Error("closing audit log", "err", err)
			}
		}()
	}
	stopWatches := make(chan struct{})
	api, err := apiserver.New(apiserver.Config{
		Resources:     resources,
		Scheme:        scheme,
		Store:         store,
		Cache:         cache,
		Intern:        table,
		TypeConverter: oa.TypeConverter(),
		Authenticator: authenticator,
		Authorizer:    authorizer.Authorizer,
		Admission:     authorizer.admission,
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
		return fmt.Errorf("building API server: %w", err)
	}

	// Background work: the cache and the controllers share one context that
	// ends after the HTTP server has drained.
	bgCtx, stopBG := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	defer func() {
		stopBG()
		bg.Wait()
	}()
	bg.Add(1)
	go func() { defer bg.Done(); probe.run(bgCtx) }()
	if auditLog != nil {
		bg.Add(1)
		go func() {
			defer bg.Done()
			auditLog.Run(bgCtx)
		}()
	}
	bg.Add(1)
	go func() {
		defer bg.Done()
		if err := cache.Run(bgCtx); err != nil && !errors.Is(err, context.Canceled) {
			log.Error("watch cache stopped", "err", err)
		}
	}()
	if err := cache.WaitReady(ctx); err != nil {
		return fmt.Errorf("waiting for the watch cache: %w", err)
	}
	bg.Add(2)
	go func() {
		defer bg.Done()
		if err := authenticator.Run(bgCtx); err != nil && bgCtx.Err() == nil {
			log.Error("token file watch stopped", "err", err)
		}
	}()
	go func() {
		defer bg.Done()
		if err := authorizer.run(bgCtx); err != nil && bgCtx.Err() == nil {
			log.Error("RBAC policy watch stopped", "err", err)
		}
	}()
	if err := authorizer.waitSynced(ctx); err != nil {
		return fmt.Errorf("waiting for the RBAC policy: %w", err)
	}
	if cl == nil {
		if err := startStandalone(ctx, bgCtx, &bg, cfg, api, cache, stored, probe, reg); err != nil {
			return err
		}
	}
	guard, err := connguard.New(cfg.Connections, reg, log.With("component", "connections"))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.SecurePort)))
	if err != nil {
		return fmt.Errorf("listening: %w", err)
	}
	addr := ln.Addr().String()
	kubeconfig, err := ca.EnsureAdminKubeconfig(cfg.DataDir, "https://"+clientAddress(cfg.BindAddress, ln.Addr()))
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("writing admin kubeconfig: %w", err)
	}
	srv, err := guard.Server(api, tlsConfig)
	if err != nil {
		_ = ln.Close()
		return err
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.ServeTLS(guard.Listener(ln), "", "") }()
	ready.set(true)
	log.Info("serving", "address", "https://"+addr, "kubeconfig", kubeconfig, "dataDir", cfg.DataDir)
	if cfg.Ready != nil {
		cfg.Ready(addr, kubeconfig)
	}

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		return fmt.Errorf("serving: %w", err)
	}
	log.Info("shutting down")
	ready.set(false)
	close(stopWatches)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Error("graceful shutdown incomplete", "err", err)
		_ = srv.Close()
	}
	<-serveErr
	return nil
}

// startStandalone does what serve does in a world of its own: the server
// itself (system:apiserver in system:masters) creates the system namespaces
// and the bootstrap RBAC policy before it serves, and starts the
// controllers a cluster would run, each under its own service account.
func startStandalone(ctx, bgCtx context.Context, bg *sync.WaitGroup, cfg Config, api *apiserver.Server, cache *watchcache.Cache, stored *registry.Set, probe *storeProbe, reg *prometheus.Registry) error {
	log := cfg.Logger
	loopback, err := kubernetes.NewForConfig(api.ServerLoopbackConfig())
	if err != nil {
		return fmt.Errorf("loopback client: %w", err)
	}
	if err := namespaces.Ensure(ctx, loopback, nsregistry.System); err != nil {
		return err
	}
	if err := rbacbootstrap.Ensure(ctx, loopback); err != nil {
		return fmt.Errorf("bootstrap RBAC policy: %w", err)
	}
	bg.Add(1)
	go func() {
		defer bg.Done()
		namespaces.Run(bgCtx, loopback, nsregistry.System, namespaces.Interval, log.With("controller", "namespaces"))
	}()
	cfg.NodeLifecycle.StoreStatus = probe.nodeLifecycleStatus
	if cfg.NodeLifecycle.OnMonitorPass == nil {
		cfg.NodeLifecycle.OnMonitorPass = newMonitorPassMetric(reg)
	}
	cc := controller.Context{Cache: cache, Client: loopback, Resources: stored, Logger: log, Now: time.Now}
	return startControllers(ctx, bgCtx, bg, cc, newControllerClients(api), api, cfg)
}

// clientAddress is the address clients should dial: a wildcard bind address
// is reachable on loopback.
func clientAddress(bind string, a net.Addr) string {
	_, port, _ := net.SplitHostPort(a.String())
	host := bind
	if ip := net.ParseIP(bind); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
