package server

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/leasehold/leasehold/internal/controller/apiserveridentity"
)

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
