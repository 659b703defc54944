package robustness

import (
	"cmp"
	"fmt"
	"os"
	"testing"
	"time"
)

// TestSoak is the long run: rounds of traffic and faults (each on a fresh
// server, each history checked on its own; the embedded store and etcd
// mode in turn) alternating with fencing rounds,
// until LEASEHOLD_SOAK (a duration, such as 30m) has passed; then it logs
// what it covered. Skipped unless LEASEHOLD_SOAK is set:
//
//	LEASEHOLD_SOAK=30m go test ./test/robustness -run Soak -count=1 -v -timeout 2h
//
// LEASEHOLD_SOAK_STORE=embedded or etcd runs the rounds of that store
// alone (the fencing rounds, which run on the embedded store, only with
// embedded), so that each store gets the whole duration; two soaks of 30
// minutes, one per store, can run side by side (each on its own free
// ports and temporary directories):
//
//	LEASEHOLD_SOAK=30m LEASEHOLD_SOAK_STORE=embedded go test ./test/robustness -run Soak -count=1 -v -timeout 2h
//	LEASEHOLD_SOAK=30m LEASEHOLD_SOAK_STORE=etcd go test ./test/robustness -run Soak -count=1 -v -timeout 2h
func TestSoak(t *testing.T) {
	v := os.Getenv("LEASEHOLD_SOAK")
	if v == "" {
		t.Skip("the long run: set LEASEHOLD_SOAK=30m (a duration) to run it")
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("LEASEHOLD_SOAK=%q: %v", v, err)
	}
	store := os.Getenv("LEASEHOLD_SOAK_STORE")
	// sizeOf is the traffic round's size: the stores in turn, or one.
	sizeOf := func(round int64) roundSize {
		if round%2 == 1 {
			return soakEtcdRound
		}
		return soakRound
	}
	switch store {
	case "":
	case "embedded":
		sizeOf = func(int64) roundSize { return soakRound }
	case "etcd":
		sizeOf = func(int64) roundSize { return soakEtcdRound }
	default:
		t.Fatalf("LEASEHOLD_SOAK_STORE=%q: want embedded, etcd or nothing (both in turn)", store)
	}
	fencing := store != "etcd"
	// Built before the clock starts: the build is not part of the soak.
	// Embedded rounds and fencing (any store but etcd alone) use it.
	failpoints := ""
	if fencing {
		failpoints = failpointLeasehold(t)
	}
	base := seed(t)
	end := time.Now().Add(d)
	total := stats{Ops: map[string]int{}, Faults: map[string]int{}, Failpoints: map[string]int{}}
	var fence fenceStats
	histories := 0
	for round := int64(0); time.Now().Before(end); round++ {
		s := base + round*10000
		t.Run(fmt.Sprintf("traffic-%d", round), func(t *testing.T) {
			t.Logf("seed %d", s)
			size := sizeOf(round)
			if !size.Etcd {
				size.Faults.FailpointBinary = failpoints
			}
			st := runRound(t, s, size)
			t.Log(st)
			total.add(st)
			histories++
		})
		if !fencing || !time.Now().Before(end) {
			continue
		}
		t.Run(fmt.Sprintf("fencing-%d", round), func(t *testing.T) {
			t.Logf("seed %d", s)
			size := soakFence
			size.FailpointBinary = failpoints
			st := runFencing(t, s, size)
			t.Log(st)
			fence.add(st)
		})
	}
	t.Logf("soak of %v (store: %s): %d histories checked: %v", d, cmp.Or(store, "both in turn"), histories, total)
	if fencing {
		t.Logf("soak fencing: %v", fence)
	}
}
