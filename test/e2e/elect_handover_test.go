package e2e

import (
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Fast hand-over of `leasehold elect`: a candidate watches the lease and
// takes a released one at once, while a lease that was not released (its
// holder frozen or killed) is still taken over only after a full lease
// duration.

const (
	// Slow polling, so that only the watch can explain a fast hand-over:
	// without it the waiting candidate tries again 10-22 s after its
	// first try (retry period with client-go's jitter of up to 1.2).
	handoverLeaseDuration = 20 * time.Second
	handoverRenewDeadline = 15 * time.Second
	handoverRetryPeriod   = 10 * time.Second
	// handoverBound is far below the retry period yet generous: a
	// hand-over's median is about 50 ms (docs/election.md, BenchmarkElectHandover;
	// with the watch disabled this test measured 19 s); the rest
	// is for two processes being scheduled on a loaded 2-core machine
	// (the old leader's command stopping, the release, the watch event,
	// the takeover and the new command starting).
	handoverBound = 3 * time.Second
)

// startTimed runs an elector with the given timings.
func (h *electHarness) startTimed(identity string, lease, renew, retry time.Duration) *elector {
	h.t.Helper()
	return h.startProcess(identity, h.bin, "elect", "--kubeconfig", h.kubeconfig, "--lease", h.lease, "--identity", identity,
		"--lease-duration", lease.String(), "--renew-deadline", renew.String(),
		"--retry-period", retry.String(), "--grace-period", electGracePeriod.String(),
		"--", "sh", "-c", electScript)
}

// waitTried waits until the elector has made its first attempt to acquire
// (it logs the holder it found) and returns when it saw that line.
func (h *electHarness) waitTried(e *elector) time.Duration {
	h.t.Helper()
	deadline := time.Now().Add(electWait)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(e.out); err == nil && strings.Contains(string(b), "new leader observed") {
			return electUptime(h.t)
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.t.Fatalf("elector %s made no attempt within %v", e.identity, electWait)
	return 0
}

func TestElectHandoverOnRelease(t *testing.T) {
	h := newElectHarness(t)
	a := h.startTimed("first", handoverLeaseDuration, handoverRenewDeadline, handoverRetryPeriod)
	first := h.waitStart(-1)
	b := h.startTimed("second", handoverLeaseDuration, handoverRenewDeadline, handoverRetryPeriod)
	tried := h.waitTried(b)

	// SIGTERM: the leader stops its command, then releases the lease.
	stoppedAt := electUptime(t)
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	next := h.waitStart(first.token)
	took := next.at - stoppedAt
	t.Logf("hand-over %s (token %d) -> %s (token %d) in %v, %v after the candidate's first try (bound %v, next poll at >= %v)",
		first.identity, first.token, next.identity, next.token, took, next.at-tried, handoverBound, handoverRetryPeriod)
	if next.identity != "second" {
		t.Fatalf("new leader %s, want second", next.identity)
	}
	if took > handoverBound {
		t.Errorf("released lease taken %v after SIGTERM, more than %v", took, handoverBound)
	}
	if next.at-tried >= handoverRetryPeriod {
		t.Errorf("taken %v after the candidate's first try: that is polling, not the watch", next.at-tried)
	}
	if next.token != first.token+1 {
		t.Errorf("token %d after %d, want exactly one more (leaseTransitions)", next.token, first.token)
	}
	if code := h.wait(a); code != 0 {
		t.Errorf("released elector exited with %d, want 0", code)
	}
	delete(h.electors, "first")

	// The command exiting by itself releases too: stop the new leader's
	// command (not its elector); a third candidate takes over at once.
	c := h.startTimed("third", handoverLeaseDuration, handoverRenewDeadline, handoverRetryPeriod)
	h.waitTried(c)
	exitedAt := electUptime(t)
	if err := syscall.Kill(next.pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	third := h.waitStart(next.token)
	t.Logf("hand-over on command exit %s -> %s (token %d) in %v", next.identity, third.identity, third.token, third.at-exitedAt)
	if d := third.at - exitedAt; d > handoverBound {
		t.Errorf("lease released by a command's exit taken %v later, more than %v", d, handoverBound)
	}
	if third.token != next.token+1 {
		t.Errorf("token %d after %d, want exactly one more", third.token, next.token)
	}
	h.checkOneAtATime()
}

// TestElectUnreleasedLeaseWaits: a holder that stops renewing without
// releasing (frozen, or killed) is taken over only once the lease duration
// has passed since its last renewal, although its candidate watches the
// lease. Uses the short timings of the other elect tests.
func TestElectUnreleasedLeaseWaits(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(t *testing.T, e *elector, cmdPid int)
	}{
		{"frozen", func(t *testing.T, e *elector, cmdPid int) {
			for _, pid := range []int{e.cmd.Process.Pid, -cmdPid} { // elector, command's group
				if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"killed", func(t *testing.T, e *elector, _ int) {
			if err := e.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			<-e.done
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newElectHarness(t)
			a := h.start("holder")
			first := h.waitStart(-1)
			b := h.start("waiter")
			h.waitTried(b)
			time.Sleep(2 * electRetryPeriod) // the watch sees renewals
			tc.stop(t, a, first.pid)

			// The last renewal, on the monotonic clock of the log: the
			// holder wrote renewTime with its wall clock (same machine).
			lease := h.leaseNow()
			wall, up := time.Now(), electUptime(t)
			lastRenewal := up - wall.Sub(lease.Spec.RenewTime.Time)
			if holderIdentity(lease) != "holder" {
				t.Fatalf("holder %q before the takeover, want holder", holderIdentity(lease))
			}
			next := h.waitStart(first.token)
			wait := next.at - lastRenewal
			t.Logf("%s holder's lease taken by %s %v after its last renewal (lease duration %v)", tc.name, next.identity, wait, electLeaseDuration)
			// /proc/uptime has 10 ms resolution.
			if wait < electLeaseDuration-20*time.Millisecond {
				t.Errorf("unreleased lease taken %v after the last renewal, before the lease duration %v", wait, electLeaseDuration)
			}
			if wait > electFailoverBound {
				t.Errorf("unreleased lease taken %v after the last renewal, more than %v", wait, electFailoverBound)
			}
			if next.token != first.token+1 {
				t.Errorf("token %d after %d, want exactly one more", next.token, first.token)
			}
		})
	}
}
