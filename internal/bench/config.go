package bench

import (
	"fmt"
	"io"
	"log/slog"
	"time"
)

// Config holds everything a run needs besides the clients. Fields that only
// one workload uses say so.
type Config struct {
	// Namespace holds the benchmark's leases; it is created if missing.
	Namespace string
	// Duration is the measured period, after setup.
	Duration time.Duration
	// Clients is the number of concurrent workers: in max mode each owns a
	// share of the leases and renews them back to back; in rate mode they
	// carry out renewals as they fall due.
	Clients int
	// Leases is the number of leases renewed in max mode (at least Clients).
	Leases int
	// Nodes is the number of simulated nodes in rate mode, one lease each.
	Nodes int
	// Interval is how often each node renews in rate mode, and each key is
	// swapped in etcd-cas (zero there: back to back).
	Interval time.Duration
	// RegisterNodes (rate mode) registers a Node for every simulated node,
	// with the agent's Ready status, and makes it the owner of the node's
	// lease, which must then be in kube-node-lease: the server's node
	// lifecycle controller and garbage collector then carry the fleet they
	// would carry for real nodes, while the renewals stay as cheap for the
	// load generator as without.
	RegisterNodes bool
	// Ramp (fleet mode) spreads the agents' starts evenly over this long, so
	// that registration does not hit the server with Nodes creates at once.
	// Zero starts them all together.
	Ramp time.Duration
	// NodeStatusUpdateFrequency (fleet mode) is how often each agent reads
	// its Node to decide on a status report: the kubelet's 10 s by default.
	NodeStatusUpdateFrequency time.Duration
	// NodeTokens (fleet mode), when set, makes each agent send all its
	// requests as its node, with the node's token, over connections that
	// present none of the REST config's credentials. (Max and rate take
	// node tokens through NewNodeClients.)
	NodeTokens *NodeTokens
	// LeaseDurationSeconds is written into every lease (the kubelet's 40 s by
	// default); it does not change the load, only what the objects say.
	LeaseDurationSeconds int32
	// RequestTimeout bounds each request.
	RequestTimeout time.Duration
	// ServerPID, when non-zero, is a local server process whose CPU time and
	// peak RSS are reported.
	ServerPID int
	// ProgressInterval is how often a progress line is written (1 s by default).
	ProgressInterval time.Duration
	// Progress receives the progress lines; nil discards them.
	Progress io.Writer
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// Defaults for the fields that have one.
const (
	DefaultLeaseDurationSeconds = 40
	DefaultRequestTimeout       = 10 * time.Second
	DefaultProgressInterval     = time.Second
)

// withDefaults fills in the zero fields that have a default.
func (c Config) withDefaults() Config {
	if c.LeaseDurationSeconds == 0 {
		c.LeaseDurationSeconds = DefaultLeaseDurationSeconds
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.ProgressInterval == 0 {
		c.ProgressInterval = DefaultProgressInterval
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// validateCommon checks the fields every workload uses.
func (c Config) validateCommon() error {
	switch {
	case c.Namespace == "":
		return fmt.Errorf("namespace must be set")
	case c.Duration <= 0:
		return fmt.Errorf("duration must be positive, got %v", c.Duration)
	case c.Clients <= 0:
		return fmt.Errorf("clients must be positive, got %d", c.Clients)
	case c.RequestTimeout < 0 || c.ProgressInterval < 0:
		return fmt.Errorf("request timeout and progress interval must not be negative")
	case c.ServerPID < 0:
		return fmt.Errorf("server PID must not be negative, got %d", c.ServerPID)
	}
	return nil
}
