package robustness

import (
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
func TestSoak(t *testing.T) {
	v := os.Getenv("LEASEHOLD_SOAK")
	if v == "" {
		t.Skip("the long run: set LEASEHOLD_SOAK=30m (a duration) to run it")
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("LEASEHOLD_SOAK=%q: %v", v, err)
	}
	base := seed(t)
	end := time.Now().Add(d)
	total := stats{Ops: map[string]int{}, Faults: map[string]int{}}
	var fence fenceStats
	histories := 0
	for round := int64(0); time.Now().Before(end); round++ {
		s := base + round*10000
		t.Run(fmt.Sprintf("traffic-%d", round), func(t *testing.T) {
			t.Logf("seed %d", s)
			size := soakRound
			if round%2 == 1 {
				size = soakEtcdRound
			}
			st := runRound(t, s, size)
			t.Log(st)
			total.add(st)
			histories++
		})
		if !time.Now().Before(end) {
			break
		}
		t.Run(fmt.Sprintf("fencing-%d", round), func(t *testing.T) {
			t.Logf("seed %d", s)
			st := runFencing(t, s, soakFence)
			t.Log(st)
			fence.add(st)
		})
	}
	t.Logf("soak of %v: %d histories checked: %v", d, histories, total)
	t.Logf("soak fencing: %v", fence)
}
