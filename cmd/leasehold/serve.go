package main

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/klog/v2"

	"github.com/leasehold/leasehold/internal/apiserver"
	"github.com/leasehold/leasehold/internal/authz/chain"
	"github.com/leasehold/leasehold/internal/controller/nodelifecycle"
	"github.com/leasehold/leasehold/internal/server"
)

func newServeCmd() *cobra.Command {
	var (
		cfg         server.Config
		logLevel    string
		memoryLimit string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the Kubernetes Lease API and run its controllers",
		Long: `Serve the Kubernetes API for coordination.k8s.io/v1 Leases (and the
namespaces around them) over HTTPS with HTTP/2, on durable embedded storage.

With no flags it listens on https://127.0.0.1:6443, keeps its data in
./leasehold-data, generates a CA and serving certificate there on first
start, and writes leasehold-data/admin.kubeconfig (group system:masters), so
that KUBECONFIG=leasehold-data/admin.kubeconfig kubectl get leases -A works.
SIGTERM finishes in-flight writes, ends watches and exits 0.

Unless GOGC or GOMEMLIMIT is set, the Go garbage collector runs at GOGC=200
(less CPU per request for about one more watch cache's worth of memory)
under a soft limit of --memory-limit, raised only when the live data would
leave less than a quarter of itself above it: a 100,000-node server stays
under 1 GiB.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return &exitError{code: 2, err: err}
			}
			if err := cfg.NodeLifecycle.Validate(); err != nil {
				return &exitError{code: 2, err: err}
			}
			cfg.Logger = slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
			// k8s.io libraries that log through klog's process-wide logger
			// (behind a cluster: the controllers that follow its
			// authentication ConfigMap) write the same JSON lines.
			klog.SetSlogLogger(cfg.Logger)
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			waitGC, err := startServeGC(ctx, cfg.Logger, memoryLimit)
			if err != nil {
				return &exitError{code: 2, err: err}
			}
			err = server.Run(ctx, cfg)
			cancel()
			waitGC()
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.DataDir, "data-dir", "leasehold-data", "directory for the database, certificates and admin.kubeconfig")
	f.StringVar(&cfg.BindAddress, "bind-address", "127.0.0.1", "IP address to listen on")
	f.IntVar(&cfg.SecurePort, "secure-port", 6443, "HTTPS port; 0 picks a free port (printed in the log)")
	f.StringVar(&cfg.TLSCertFile, "tls-cert-file", "", "serving certificate (default: generated under --data-dir)")
	f.StringVar(&cfg.TLSPrivateKey, "tls-private-key-file", "", "serving certificate key, with --tls-cert-file")
	f.StringVar(&cfg.ClientCAFile, "client-ca-file", "", "extra CA bundle trusted for client certificates")
	addAuthnFlags(cmd, &cfg)
	addClusterFlags(cmd, &cfg)
	addTrustFlags(cmd, &cfg)
	f.StringSliceVar(&cfg.AuthorizationModes, "authorization-mode", chain.DefaultModes(), "ordered list of authorizers; the first that allows or denies decides (system:masters is always allowed): "+strings.Join(chain.Choices(), ","))
	f.StringSliceVar(&cfg.EtcdServers, "etcd-servers", nil, "etcd client URLs (comma-separated); the data then lives in etcd and --data-dir keeps only certificates and admin.kubeconfig")
	f.StringVar(&cfg.EtcdPrefix, "etcd-prefix", "/registry", "etcd key prefix that replaces the /registry of every key")
	f.StringVar(&cfg.EtcdCAFile, "etcd-cafile", "", "CA bundle that verifies the etcd servers")
	f.StringVar(&cfg.EtcdCertFile, "etcd-certfile", "", "client certificate for etcd, with --etcd-keyfile")
	f.StringVar(&cfg.EtcdKeyFile, "etcd-keyfile", "", "client certificate key for etcd")
	f.DurationVar(&cfg.BookmarkInterval, "watch-bookmark-interval", 0, "how often watches receive bookmarks (default 1m)")
	f.DurationVar(&cfg.NodeLifecycle.MonitorPeriod, "node-monitor-period", nodelifecycle.DefaultMonitorPeriod, "how often the node lifecycle controller checks node health")
	f.DurationVar(&cfg.NodeLifecycle.GracePeriod, "node-monitor-grace-period", nodelifecycle.DefaultGracePeriod, "how long a node may send no heartbeat (lease renewal or status) before it is marked Unknown")
	f.DurationVar(&cfg.NodeLifecycle.StartupGracePeriod, "node-startup-grace-period", nodelifecycle.DefaultStartupGracePeriod, "grace period for a node that never posted a Ready condition")
	f.DurationVar(&cfg.EventTTL, "event-ttl", time.Hour, "how long events are kept after their last update")
	f.IntVar(&cfg.WatchCacheWindow, "watch-cache-window", 100_000, "how many recent events the watch cache keeps for watches that resume from a resourceVersion; the embedded store keeps at least this many revisions of history")
	f.DurationVar(&cfg.HistoryRetention, "history-retention", 5*time.Minute, "how long old revisions stay readable for watches and continue tokens (older ones answer 410 Expired); longer keeps more history on disk. The embedded store also keeps at least the watch cache's window of revisions and at most ten windows; with --etcd-servers it is the etcd compaction interval")
	f.Float64Var(&cfg.NodeLifecycle.EvictionRate, "node-eviction-rate", nodelifecycle.DefaultEvictionRate, "nodes per second per healthy zone that get NoExecute taints")
	f.IntVar(&cfg.Limits.MaxRequestsInflight, "max-requests-inflight", 400, "maximum concurrent non-mutating requests (watches not counted; system:masters exempt); 0 means unlimited")
	f.IntVar(&cfg.Limits.MaxMutatingRequestsInflight, "max-mutating-requests-inflight", 200, "maximum concurrent mutating requests (system:masters exempt); 0 means unlimited")
	f.IntVar(&cfg.Limits.PerUserRequests, "max-requests-per-user", apiserver.DefaultPerUserRequests, "maximum concurrent non-watch requests of one user (system:masters exempt); 0 means unlimited")
	f.IntVar(&cfg.Limits.PerUserWatches, "max-watches-per-user", apiserver.DefaultPerUserWatches, "maximum open watches of one user (system:masters exempt); 0 means unlimited")
	addConnectionFlags(cmd, &cfg.Connections)
	addLeaderElectFlags(cmd, &cfg.Replica)
	addAuditFlags(cmd, &cfg.Audit)
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.StringVar(&memoryLimit, "memory-limit", serveMemoryLimit, "soft limit on the Go runtime's memory, as GOMEMLIMIT (a quantity: 900Mi, 2Gi), raised when the live heap would leave less than 25% of itself above it; 0 keeps GOGC=200 alone. Ignored when GOGC or GOMEMLIMIT is set")
	return cmd
}
