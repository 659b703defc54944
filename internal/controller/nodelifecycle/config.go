package nodelifecycle

import (
	"errors"
	"log/slog"
	"time"

	"k8s.io/utils/clock"
)

// Defaults are kube-controller-manager's (reference §3.1).
const (
	DefaultMonitorPeriod             = 5 * time.Second
	DefaultGracePeriod               = 50 * time.Second
	DefaultStartupGracePeriod        = 60 * time.Second
	DefaultEvictionRate              = 0.1
	DefaultSecondaryEvictionRate     = 0.01
	DefaultLargeClusterSizeThreshold = 50
	DefaultUnhealthyZoneThreshold    = 0.55

	// taintingPeriod is how often the NoExecute queues are drained
	// (NodeEvictionPeriod in kube-controller-manager).
	taintingPeriod = 100 * time.Millisecond
	// statusRetries and statusRetrySleep bound the retries of one node's
	// health update (NodeHealthUpdateRetry, retrySleepTime).
	statusRetries    = 5
	statusRetrySleep = 20 * time.Millisecond
)

// Config tunes the controller. Zero fields take the defaults above.
type Config struct {
	// MonitorPeriod is how often node health is checked (--node-monitor-period).
	MonitorPeriod time.Duration
	// GracePeriod is how long a node with a Ready condition may stay silent
	// before it is marked Unknown (--node-monitor-grace-period).
	GracePeriod time.Duration
	// StartupGracePeriod replaces GracePeriod for a node that never posted a
	// Ready condition (--node-startup-grace-period).
	StartupGracePeriod time.Duration
	// EvictionRate is the NoExecute tainting rate per healthy zone, in nodes
	// per second (--node-eviction-rate); the bucket's burst is 1.
	EvictionRate float64
	// SecondaryEvictionRate is the rate in a partially disrupted zone of more
	// than LargeClusterSizeThreshold nodes (smaller ones get 0).
	SecondaryEvictionRate     float64
	LargeClusterSizeThreshold int
	// UnhealthyZoneThreshold is the NotReady fraction (with more than 2
	// NotReady nodes) that makes a zone partially disrupted.
	UnhealthyZoneThreshold float64

	// Clock drives tickers, rate limiters and the times the controller
	// writes (a fake one in tests).
	Clock clock.WithTicker
	// Monotonic is the time elapsed since the controller started, on a
	// clock that is never stepped: probe timestamps (when the controller
	// last saw a node alive) are taken from it, so a step of the wall clock
	// (NTP, an operator) neither ages nor rejuvenates every node at once.
	// nil means Clock.Since(the start), which for the real clock reads
	// Go's monotonic clock.
	Monotonic func() time.Duration
	Logger    *slog.Logger
	// StoreStatus, if set, tells whether the control plane's own store is
	// reachable (serve probes it): node health is not judged while it is
	// down, nor is its outage counted in any node's silence (storeoutage.go).
	StoreStatus func() StoreStatus
	// OnMonitorPass, if set, is called after every monitor pass with its
	// duration and the number of nodes it looked at (serve feeds a metric).
	OnMonitorPass func(d time.Duration, nodes int)
}

func (c *Config) defaults() {
	if c.MonitorPeriod == 0 {
		c.MonitorPeriod = DefaultMonitorPeriod
	}
	if c.GracePeriod == 0 {
		c.GracePeriod = DefaultGracePeriod
	}
	if c.StartupGracePeriod == 0 {
		c.StartupGracePeriod = DefaultStartupGracePeriod
	}
	if c.EvictionRate == 0 {
		c.EvictionRate = DefaultEvictionRate
	}
	if c.SecondaryEvictionRate == 0 {
		c.SecondaryEvictionRate = DefaultSecondaryEvictionRate
	}
	if c.LargeClusterSizeThreshold == 0 {
		c.LargeClusterSizeThreshold = DefaultLargeClusterSizeThreshold
	}
	if c.UnhealthyZoneThreshold == 0 {
		c.UnhealthyZoneThreshold = DefaultUnhealthyZoneThreshold
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Monotonic == nil {
		clk, start := c.Clock, c.Clock.Now()
		c.Monotonic = func() time.Duration { return clk.Since(start) }
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Validate rejects settings the controller cannot work with (zero values
// are fine: they take the defaults).
func (c Config) Validate() error {
	switch {
	case c.MonitorPeriod < 0, c.GracePeriod < 0, c.StartupGracePeriod < 0:
		return errors.New("node lifecycle periods must not be negative")
	case c.EvictionRate < 0, c.SecondaryEvictionRate < 0:
		return errors.New("node eviction rates must not be negative")
	case c.UnhealthyZoneThreshold < 0 || c.UnhealthyZoneThreshold > 1:
		return errors.New("unhealthy zone threshold must be within [0, 1]")
	}
	return nil
}
