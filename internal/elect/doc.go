// Package elect runs a command only while this process holds a Kubernetes
// Lease, using client-go's leaderelection package with a LeaseLock, so it
// works against any Kubernetes-compatible API server and interoperates with
// unmodified client-go electors competing for the same Lease.
//
// Invariants:
//
//   - The command runs only after this elector has acquired the Lease and
//     obtained its fencing token; it is stopped (SIGTERM to its process
//     group, SIGKILL after the grace period) before the Lease is released,
//     whatever the reason for stopping: lost leadership, a signal to the
//     elector, or the command exiting by itself. While the command is being
//     stopped on a signal the elector keeps renewing, so no other candidate
//     can take over before the command is gone.
//   - The fencing token given to the command (LEASEHOLD_FENCING_TOKEN) is the
//     Lease's spec.leaseTransitions as this elector wrote it, and it is
//     strictly greater than every token handed out earlier for the same
//     Lease object (see fencing.go for the argument). Deleting and
//     recreating the Lease restarts the count at 0: tokens are only ordered
//     within one Lease object (one uid).
//   - Leader election with leases gives no mutual exclusion in a strict
//     sense (client-go's own documentation says so): a leader that is frozen
//     or partitioned keeps running its command until it notices. The token is
//     what lets a downstream system reject such a stale leader's writes.
//   - With Config.Coordinated (KEP-4355) the elector never creates or takes
//     over the Lease: it keeps a LeaseCandidate renewed through client-go's
//     candidate controller and leads only once the server's election
//     controller names it holder. When the Lease names a preferredHolder it
//     stops the command, deletes its LeaseCandidate and then releases, so
//     the controller never hands the released Lease back to it.
//   - A candidate watches the Lease and tries at once when it is released
//     (fast hand-over), but the decision to take it stays client-go's, on a
//     fresh read: a lease that was not released is taken over only after
//     client-go has seen it unchanged for a lease duration (campaign.go).
//   - An elector acquires at most once: after losing leadership it stops and
//     exits (ExitLeadershipLost), like kube-controller-manager does, so a
//     supervisor restarts it with a fresh state.
package elect
