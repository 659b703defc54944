package e2e

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Hand-over and crash failover times of `leasehold elect` with real
// processes at the default timings (lease 15 s, renew deadline 10 s, retry
// 2 s), against a `leasehold serve` process on the same machine:
//
//	go test ./test/e2e -run '^$' -bench 'ElectHandover|ElectCrashFailover' -benchtime 1x
//
// Each measurement runs from the signal sent to the leader's elector to
// the moment the new leader's command prints its first line, read from
// that elector's stdout pipe (so the clock is the benchmark's own).

const (
	benchHandovers = 50 // released leases (SIGTERM to the leader)
	benchCrashes   = 5  // unreleased leases (SIGKILL to the leader)
	benchWait      = 60 * time.Second
)

// benchElector is an elector whose command's first line and whose first
// attempt to acquire are timestamped as they arrive.
type benchElector struct {
	cmd     *exec.Cmd
	leading chan time.Time // the command printed its line
	tried   chan struct{}  // the elector logged the holder it found
	exited  chan struct{}
	logs    strings.Builder
	mu      sync.Mutex
}

func startBenchElector(b *testing.B, kubeconfig, lease, identity string) *benchElector {
	b.Helper()
	cmd := exec.Command(leaseholdBinary, "elect", "--kubeconfig", kubeconfig, "--lease", lease, "--identity", identity,
		"--", "sh", "-c", "echo leading; exec sleep 3600")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("start elector %s: %v", identity, err)
	}
	e := &benchElector{cmd: cmd, leading: make(chan time.Time, 1), tried: make(chan struct{}), exited: make(chan struct{})}
	var readers sync.WaitGroup
	readers.Go(func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "leading" {
				e.leading <- time.Now()
			}
		}
	})
	readers.Go(func() {
		sc := bufio.NewScanner(stderr)
		tried := false
		for sc.Scan() {
			e.mu.Lock()
			e.logs.WriteString(sc.Text() + "\n")
			e.mu.Unlock()
			if !tried && strings.Contains(sc.Text(), "new leader observed") {
				tried = true
				close(e.tried)
			}
		}
	})
	go func() {
		readers.Wait() // pipes must be drained before Wait
		_ = cmd.Wait()
		close(e.exited)
	}()
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-e.exited
	})
	return e
}

// await returns what ch delivers, failing after benchWait.
func await[T any](b *testing.B, e *benchElector, ch <-chan T, what string) T {
	b.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(benchWait):
		e.mu.Lock()
		defer e.mu.Unlock()
		b.Fatalf("%s: nothing within %v; elector log:\n%s", what, benchWait, e.logs.String())
		var zero T
		return zero
	}
}

// measureTakeovers runs n leader changes, stopping each leader with sig
// while one candidate waits, and returns how long each took.
func measureTakeovers(b *testing.B, n int, sig syscall.Signal) []time.Duration {
	b.Helper()
	kubeconfig := startServer(b).Kubeconfig
	lease := fmt.Sprintf("kube-system/elect-bench-%d", time.Now().UnixNano())
	leader := startBenchElector(b, kubeconfig, lease, "elector-0")
	await(b, leader, leader.leading, "first leader")
	cand := startBenchElector(b, kubeconfig, lease, "elector-1")
	await(b, cand, cand.tried, "first candidate")
	var took []time.Duration
	for i := range n {
		// A random phase of the candidate's retry timer, as in life.
		time.Sleep(rand.N(2 * time.Second))
		start := time.Now()
		if err := leader.cmd.Process.Signal(sig); err != nil {
			b.Fatal(err)
		}
		took = append(took, await(b, cand, cand.leading, "new leader").Sub(start))
		await(b, leader, leader.exited, "old leader's exit")
		if sig == syscall.SIGTERM && leader.cmd.ProcessState.ExitCode() != 0 {
			b.Fatalf("released leader exited with %d, want 0", leader.cmd.ProcessState.ExitCode())
		}
		leader = cand
		cand = startBenchElector(b, kubeconfig, lease, fmt.Sprintf("elector-%d", i+2))
		await(b, cand, cand.tried, "next candidate")
	}
	return took
}

// reportDurations logs and reports min, median, p90 and max in ms.
func reportDurations(b *testing.B, what string, d []time.Duration) {
	b.Helper()
	slices.Sort(d)
	ms := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
	at := func(q float64) time.Duration { return d[min(len(d)-1, int(q*float64(len(d))))] } // nearest rank
	b.ReportMetric(ms(d[0]), "min-ms")
	b.ReportMetric(ms(at(0.5)), "median-ms")
	b.ReportMetric(ms(at(0.9)), "p90-ms")
	b.ReportMetric(ms(d[len(d)-1]), "max-ms")
	b.Logf("%s over %d: min %.1f ms, median %.1f ms, p90 %.1f ms, max %.1f ms", what, len(d), ms(d[0]), ms(at(0.5)), ms(at(0.9)), ms(d[len(d)-1]))
}

// BenchmarkElectHandover: the leader gets SIGTERM (it stops its command and
// releases the lease); a waiting candidate leads.
func BenchmarkElectHandover(b *testing.B) {
	for b.Loop() {
		reportDurations(b, "hand-over after SIGTERM", measureTakeovers(b, benchHandovers, syscall.SIGTERM))
	}
}

// BenchmarkElectCrashFailover: the leader gets SIGKILL (the lease is not
// released); the candidate waits out the lease duration, then leads.
func BenchmarkElectCrashFailover(b *testing.B) {
	for b.Loop() {
		reportDurations(b, "failover after SIGKILL", measureTakeovers(b, benchCrashes, syscall.SIGKILL))
	}
}
