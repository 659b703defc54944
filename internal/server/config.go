// Package server assembles `leasehold serve`: storage, watch cache, the API
// request path, discovery, OpenAPI, metrics, TLS and the controllers, and
// owns their lifetimes. Run returns only after every goroutine it started
// has stopped and the store is closed, so an acknowledged write is on disk
// when the process exits.
package server

import (
	"log/slog"
	"time"

	"github.com/leasehold/leasehold/internal/apiserver"
	"github.com/leasehold/leasehold/internal/authz/chain"
	"github.com/leasehold/leasehold/internal/cluster"
	"github.com/leasehold/leasehold/internal/connguard"
	"github.com/leasehold/leasehold/internal/controller/nodelifecycle"
)

// Config is what `leasehold serve` is told by its flags.
type Config struct {
	DataDir       string
	BindAddress   string
	SecurePort    int
	TLSCertFile   string
	TLSPrivateKey string
	ClientCAFile  string
	// TokenAuthFile is --token-auth-file: static bearer tokens in
	// kube-apiserver's CSV format, re-read whenever the file changes.
	TokenAuthFile string
	// DisableAnonymousAuth is --anonymous-auth=false: a request without
	// any credential gets 401 instead of being system:anonymous. The zero
	// value keeps kube-apiserver's default, anonymous requests on.
	DisableAnonymousAuth bool
	// AuthorizationModes is --authorization-mode (default Node,RBAC; see
	// internal/authz/chain).
	AuthorizationModes []string
	// EtcdServers, when set, puts the data on that etcd cluster instead of
	// the embedded store; DataDir then holds only the certificates and the
	// kubeconfig. EtcdPrefix and the Etcd*File fields are kube-apiserver's
	// --etcd-prefix, --etcd-cafile, --etcd-certfile and --etcd-keyfile.
	EtcdServers  []string
	EtcdPrefix   string
	EtcdCAFile   string
	EtcdCertFile string
	EtcdKeyFile  string

	Logger *slog.Logger
	// ShutdownTimeout bounds the wait for in-flight requests on shutdown.
	ShutdownTimeout time.Duration
	// WatchCacheWindow is the number of recent events kept for watches.
	WatchCacheWindow int
	// WatchCacheColdAfter is how long a cached object stays unchanged before
	// the watch cache keeps it compressed (watchcache.DefaultColdAfter if 0).
	WatchCacheColdAfter time.Duration
	// BookmarkInterval is how often watches get bookmarks (default 1 min).
	BookmarkInterval time.Duration
	// HistoryRetention is how long old revisions stay available for
	// watch-from-revision and continue tokens (default 5 min, as etcd's compaction).
	HistoryRetention time.Duration
	// NodeLifecycle tunes the node lifecycle controller (zero fields: defaults).
	NodeLifecycle nodelifecycle.Config
	// EventTTL is how long events are kept after their last update
	// (kube-apiserver's --event-ttl, default 1 h); EventTTLInterval is how
	// often expired ones are swept (default 1 min).
	EventTTL         time.Duration
	EventTTLInterval time.Duration
	// Limits are --max-requests-inflight, --max-mutating-requests-inflight,
	// --max-requests-per-user and --max-watches-per-user (zero: unlimited;
	// the flags' defaults are kube-apiserver's 400 and 200, and
	// apiserver.DefaultPerUserRequests and DefaultPerUserWatches).
	Limits apiserver.Limits
	// Connections bounds client connections: their number (derived from
	// RLIMIT_NOFILE), idle and header timeouts, HTTP/2 streams and resets.
	Connections connguard.Config
	// Audit is the --audit-* flags (audit.go); no log path, no auditing.
	Audit AuditConfig
	// Replica is this replica's identity and leader election (replica.go).
	Replica ReplicaConfig
	// Trust is --ca-dir and --tls-san: a CA shared by replicas (tls.go).
	Trust TrustConfig
	// RequestTimeout is --request-timeout: the longest a request other
	// than a watch may take (apiserver.DefaultRequestTimeout if 0).
	RequestTimeout time.Duration
	// Cluster, when its AuthenticationKubeconfig is set, runs serve behind a
	// real cluster as the aggregated server of coordination.k8s.io
	// (cluster.go).
	Cluster cluster.Config
	// Ready, if set, receives the listening address and kubeconfig path once serving.
	Ready func(addr, kubeconfig string)
}

func (c *Config) defaults() {
	if c.DataDir == "" {
		c.DataDir = "leasehold-data"
	}
	if c.BindAddress == "" {
		c.BindAddress = "127.0.0.1"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = 30 * time.Second
	}
	if c.WatchCacheWindow == 0 {
		c.WatchCacheWindow = 100_000
	}
	if c.BookmarkInterval == 0 {
		c.BookmarkInterval = time.Minute
	}
	if c.HistoryRetention == 0 {
		c.HistoryRetention = 5 * time.Minute
	}
	if len(c.AuthorizationModes) == 0 {
		c.AuthorizationModes = chain.DefaultModes()
	}
}
