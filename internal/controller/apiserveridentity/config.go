package apiserveridentity

import (
	"fmt"
	"os"
	"time"
)

// kube-apiserver's values (IdentityLeaseDurationSeconds,
// IdentityLeaseRenewIntervalPeriod, IdentityLeaseGCPeriod).
const (
	DefaultLeaseDurationSeconds int32 = 3600
	DefaultRenewInterval              = 10 * time.Second
	DefaultGCPeriod                   = time.Hour
)

// Config tunes the controller; zero fields take the defaults.
type Config struct {
	// Hostname names the replica (lease name and kubernetes.io/hostname
	// label); default os.Hostname().
	Hostname string
	// LeaseDurationSeconds is written into the lease (default 3600).
	LeaseDurationSeconds int32
	// RenewInterval is the period between renewals (default 10 s).
	RenewInterval time.Duration
	// GCPeriod is the period between collections of expired identity
	// leases (default 1 h); the first runs at start.
	GCPeriod time.Duration
}

func (c Config) withDefaults() (Config, error) {
	if c.Hostname == "" {
		h, err := os.Hostname()
		if err != nil {
			return c, fmt.Errorf("hostname for the apiserver identity: %w", err)
		}
		c.Hostname = h
	}
	if c.LeaseDurationSeconds <= 0 {
		c.LeaseDurationSeconds = DefaultLeaseDurationSeconds
	}
	if c.RenewInterval <= 0 {
		c.RenewInterval = DefaultRenewInterval
	}
	if c.GCPeriod <= 0 {
		c.GCPeriod = DefaultGCPeriod
	}
	return c, nil
}
