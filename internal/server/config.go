package server

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/leasehold/leasehold/internal/apiserver"
	"github.com/leasehold/leasehold/internal/audit/logbackend"
	"github.com/leasehold/leasehold/internal/authz/chain"
	"github.com/leasehold/leasehold/internal/cluster"
	"github.com/leasehold/leasehold/internal/connguard"
	"github.com/leasehold/leasehold/internal/controller/apiserveridentity"
	"github.com/leasehold/leasehold/internal/controller/nodelifecycle"
)

// Config is what `leasehold serve` is told by its flags. The flag structs
// it holds are in this file (AuditConfig, TrustConfig, ReplicaConfig) or,
// owned by another package, named at their field.
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
	// Audit is the --audit-* flags (AuditConfig, below); no log path, no auditing.
	Audit AuditConfig
	// Replica is this replica's identity and leader election (ReplicaConfig, below).
	Replica ReplicaConfig
	// Trust is --ca-dir and --tls-san: a CA shared by replicas (TrustConfig, below).
	Trust TrustConfig
	// RequestTimeout is --request-timeout: the longest a request other
	// than a watch may take (apiserver.DefaultRequestTimeout if 0).
	RequestTimeout time.Duration
	// Cluster, when its AuthenticationKubeconfig is set, runs serve behind a
	// real cluster as the aggregated server of coordination.k8s.io
	// (the mode: cluster.go; its flags: internal/cluster).
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

// AuditConfig is the --audit-* flags: the policy that decides what is
// logged, and the log it is written to.
type AuditConfig struct {
	// PolicyFile is --audit-policy-file; empty means the shipped default
	// policy (docs/audit-policy.yaml) once a log path is set.
	PolicyFile string
	// Log is the --audit-log-* flags. An empty Path turns auditing off, as
	// kube-apiserver without --audit-log-path.
	Log logbackend.Options
}

// TrustConfig is how replicas share trust (--ca-dir, --tls-san).
type TrustConfig struct {
	// CADir, when set, is a directory holding a CA (ca.crt, ca.key) that
	// several replicas share, made once by `leasehold credentials init
	// --dir CADir`; it is never created here, so that replicas cannot each
	// invent their own. Credentials signed by it (kubeconfigs from
	// `leasehold credentials --data-dir CADir`, and every replica's
	// admin.kubeconfig) work on every replica. Empty: the CA in DataDir,
	// generated on first start, trusted by this replica alone.
	CADir string
	// SANs are extra names (DNS names or IP addresses) the serving
	// certificate must cover, such as a load balancer's address.
	SANs []string
}

// kube-controller-manager's leader election defaults (component-base).
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// ReplicaConfig is how this `serve` process takes part among several
// replicas on one store: its identity, and the leader election that keeps
// the controllers on one replica at a time. Zero fields take Kubernetes'
// defaults; the zero value elects, as kube-controller-manager's
// --leader-elect defaults to true.
type ReplicaConfig struct {
	// DisableLeaderElection is --leader-elect=false: this process runs the
	// controller-manager controllers without holding the lease (one
	// replica only). The coordinated election controller is elected
	// either way, as in kube-apiserver.
	DisableLeaderElection bool
	// LeaseDuration, RenewDeadline and RetryPeriod are
	// --leader-elect-lease-duration, --leader-elect-renew-deadline and
	// --leader-elect-retry-period; both elections use them.
	LeaseDuration time.Duration
	RenewDeadline time.Duration
	RetryPeriod   time.Duration
	// Hostname is --hostname-override: the name this replica goes by in
	// its identity lease (name hash and kubernetes.io/hostname label) and
	// in its election identity <hostname>_<uuid>. Default os.Hostname();
	// replicas sharing a host need distinct values.
	Hostname string
	// IdentityLeaseDurationSeconds and IdentityLeaseRenewIntervalSeconds
	// are kube-apiserver's --identity-lease-duration-seconds and
	// --identity-lease-renew-interval-seconds; IdentityLeaseGCPeriod is how
	// often expired identity leases are collected (kube-apiserver's fixed
	// IdentityLeaseGCPeriod, 1 h).
	IdentityLeaseDurationSeconds      int32
	IdentityLeaseRenewIntervalSeconds int32
	IdentityLeaseGCPeriod             time.Duration
}

// withTimings fills the election timings left zero.
func (c ReplicaConfig) withTimings() ReplicaConfig {
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = DefaultRenewDeadline
	}
	if c.RetryPeriod == 0 {
		c.RetryPeriod = DefaultRetryPeriod
	}
	return c
}

func (c *ReplicaConfig) defaults() error {
	*c = c.withTimings()
	if c.Hostname == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("hostname for the replica's identity (set --hostname-override): %w", err)
		}
		c.Hostname = h
	}
	return nil
}

// Validate checks what the flags set, with client-go's and
// kube-apiserver's rules: LeaseDuration > RenewDeadline > 1.2 × RetryPeriod
// (client-go's JitterFactor), all positive, and positive identity lease
// figures.
func (c ReplicaConfig) Validate() error {
	var errs []error
	if c.LeaseDuration < 0 || c.RenewDeadline < 0 || c.RetryPeriod < 0 {
		errs = append(errs, errors.New("--leader-elect-lease-duration, --leader-elect-renew-deadline and --leader-elect-retry-period must be greater than zero"))
	}
	d := c.withTimings()
	if d.LeaseDuration <= d.RenewDeadline {
		errs = append(errs, fmt.Errorf("--leader-elect-lease-duration (%v) must be greater than --leader-elect-renew-deadline (%v)", d.LeaseDuration, d.RenewDeadline))
	}
	if float64(d.RenewDeadline) <= 1.2*float64(d.RetryPeriod) {
		errs = append(errs, fmt.Errorf("--leader-elect-renew-deadline (%v) must be greater than 1.2 × --leader-elect-retry-period (%v)", d.RenewDeadline, d.RetryPeriod))
	}
	if c.IdentityLeaseDurationSeconds < 0 {
		errs = append(errs, fmt.Errorf("--identity-lease-duration-seconds should be a positive number, but value '%d' provided", c.IdentityLeaseDurationSeconds))
	}
	if c.IdentityLeaseRenewIntervalSeconds < 0 {
		errs = append(errs, fmt.Errorf("--identity-lease-renew-interval-seconds should be a positive number, but value '%d' provided", c.IdentityLeaseRenewIntervalSeconds))
	}
	if c.IdentityLeaseGCPeriod < 0 {
		errs = append(errs, fmt.Errorf("--identity-lease-gc-period must be positive, got %v", c.IdentityLeaseGCPeriod))
	}
	return errors.Join(errs...)
}

// identity is the apiserveridentity controller's configuration.
func (c ReplicaConfig) identity() apiserveridentity.Config {
	return apiserveridentity.Config{
		Hostname:             c.Hostname,
		LeaseDurationSeconds: c.IdentityLeaseDurationSeconds,
		RenewInterval:        time.Duration(c.IdentityLeaseRenewIntervalSeconds) * time.Second,
		GCPeriod:             c.IdentityLeaseGCPeriod,
	}
}
