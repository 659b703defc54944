package elect

import (
	"context"
	"fmt"

	"k8s.io/client-go/tools/leaderelection"
)

// Fast hand-over.
//
// client-go's acquire loop tries once per retry period (with jitter) and
// nothing can wake it up early, so a candidate would notice a released lease
// up to 2.2 retry periods late. The campaign therefore runs client-go's
// LeaderElector in rounds: each round is a fresh LeaderElector running
// until it has led and stopped leading, or until the lease watch
// (leasewatch.go) ends the round because the lease became acquirable now
// (released, or naming this identity). The next round tries at once.
//
// Why this weakens no guarantee of docs/election.md's safety model:
//
//   - Whether and how to take the lease is still client-go's decision, on a
//     fresh read, written as a PUT with that read's resourceVersion: the
//     watch's copy of the lease is never trusted, it only triggers a try.
//   - A fresh LeaderElector has observed nothing, so it counts the lease
//     duration of a lease held by someone else from its own first read.
//     Ending a round can only lengthen the wait before an unreleased lease
//     is taken over, never shorten it; and rounds end only on a released
//     lease (or one naming us), not while a holder is being waited out.
//   - A round ends only between two calls to the lock and never after the
//     acquiring write (trackingLock.wake): a write either completed in the
//     round that then leads, or was never sent. The leader's renew loop is
//     never cancelled by the watch.
//   - The fencing token comes from the acquiring write as before
//     (fencing.go): a takeover of a released lease writes
//     leaseTransitions+1, exactly as client-go does.

// campaign runs rounds until this elector has led and stopped leading, or
// ctx ends. first is the LeaderElector of the first round (built by the
// caller to report configuration errors early); later rounds get fresh ones
// from cfg. The health watchdog follows the current round's elector.
func campaign(ctx context.Context, lock *trackingLock, cfg leaderelection.LeaderElectionConfig, first *leaderelection.LeaderElector, watchdog *leaderelection.HealthzAdaptor) error {
	le := first
	for {
		watchdog.SetLeaderElection(le)
		round, end := context.WithCancel(ctx)
		lock.startRound(end)
		le.Run(round)
		end()
		if _, acquired := lock.acquisitionRecord(); acquired || ctx.Err() != nil {
			return nil
		}
		var err error
		if le, err = leaderelection.NewLeaderElector(cfg); err != nil {
			return fmt.Errorf("configure leader election: %w", err)
		}
	}
}
