package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold/internal/controller/apiserveridentity"
	"github.com/leasehold/leasehold/internal/server"
)

// addLeaderElectFlags binds serve's replica flags: kube-controller-manager's
// --leader-elect* (the controllers run on one replica at a time, elected on
// Lease kube-system/leasehold-controller-manager), the replica's identity,
// and kube-apiserver's --identity-lease-* flags.
func addLeaderElectFlags(cmd *cobra.Command, cfg *server.ReplicaConfig) {
	f := cmd.Flags()
	le := f.VarPF((*negatedBool)(&cfg.DisableLeaderElection), "leader-elect", "",
		"run the controllers only while holding Lease kube-system/"+server.ControllerManagerLease+
			", so that of several replicas on one store exactly one runs them; false runs them at once (one replica only)")
	le.NoOptDefVal = "true"
	f.DurationVar(&cfg.LeaseDuration, "leader-elect-lease-duration", server.DefaultLeaseDuration,
		"how long a non-leader replica waits after the last observed renewal before taking the lease over (also for the coordinated election controller's lease)")
	f.DurationVar(&cfg.RenewDeadline, "leader-elect-renew-deadline", server.DefaultRenewDeadline,
		"how long the leader retries renewing before it stops its controllers and gives up leadership; less than the lease duration")
	f.DurationVar(&cfg.RetryPeriod, "leader-elect-retry-period", server.DefaultRetryPeriod,
		"how often replicas try to acquire or renew the lease")
	f.StringVar(&cfg.Hostname, "hostname-override", "",
		"this replica's name in its API server identity lease (kube-system/apiserver-<hash of it>, label kubernetes.io/hostname) and in its election identity <name>_<uuid> (default: the hostname); give replicas on one host distinct names")
	f.Int32Var(&cfg.IdentityLeaseDurationSeconds, "identity-lease-duration-seconds", apiserveridentity.DefaultLeaseDurationSeconds,
		"duration of this replica's identity lease; another replica deletes it once it has expired")
	f.Int32Var(&cfg.IdentityLeaseRenewIntervalSeconds, "identity-lease-renew-interval-seconds", int32(apiserveridentity.DefaultRenewInterval/time.Second),
		"how often this replica renews its identity lease, in seconds")
	f.DurationVar(&cfg.IdentityLeaseGCPeriod, "identity-lease-gc-period", apiserveridentity.DefaultGCPeriod,
		"how often every replica deletes the expired identity leases of replicas that are gone")
	// Checked before serving, as the other flags are: a usage error (exit 2).
	prev := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		if err := cfg.Validate(); err != nil {
			return &exitError{code: 2, err: err}
		}
		if prev != nil {
			return prev(c, args)
		}
		return nil
	}
}
