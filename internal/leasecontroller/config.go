package leasecontroller

import (
	"context"
	"errors"
	"log/slog"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordclientv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/clock"
)

// Config is what one lease controller needs. Leases, Name, HolderIdentity,
// DurationSeconds, RenewInterval, Clock and Logger are required.
type Config struct {
	// Leases is the lease client of the lease's namespace.
	Leases coordclientv1.LeaseInterface
	// Namespace and Name name the lease.
	Namespace, Name string
	// HolderIdentity is written into spec.holderIdentity.
	HolderIdentity string
	// DurationSeconds is written into spec.leaseDurationSeconds.
	DurationSeconds int32
	// RenewInterval is the period between renewals (jittered by up to 4%).
	RenewInterval time.Duration
	Clock         clock.Clock
	Logger        *slog.Logger
	// Description names the lease in logs ("node lease"); default "lease".
	Description string
	// Prepare, if set, is component-helpers' post-process function: it may
	// change every lease just before it is written (created or updated),
	// e.g. to add labels or an owner reference. An error skips the write:
	// no create this round (no error either: the next renewal retries), or a
	// failed update attempt.
	Prepare func(ctx context.Context, lease *coordinationv1.Lease) error
	// OnRepeatedFailure, if set, is called when an update fails with
	// anything but a conflict from the second attempt of a renewal on.
	OnRepeatedFailure func()
	// OnRenew, if set, observes every renewal PUT: its duration and error.
	OnRenew func(d time.Duration, err error)
}

func (c Config) validate() error {
	var errs []error
	if c.Leases == nil {
		errs = append(errs, errors.New("a lease client is required"))
	}
	if c.Name == "" {
		errs = append(errs, errors.New("a lease name is required"))
	}
	if c.HolderIdentity == "" {
		errs = append(errs, errors.New("a holder identity is required"))
	}
	if c.DurationSeconds <= 0 {
		errs = append(errs, errors.New("the lease duration must be positive"))
	}
	if c.RenewInterval <= 0 {
		errs = append(errs, errors.New("the renew interval must be positive"))
	}
	if c.Clock == nil {
		errs = append(errs, errors.New("a clock is required"))
	}
	if c.Logger == nil {
		errs = append(errs, errors.New("a logger is required"))
	}
	return errors.Join(errs...)
}
