package nodelifecycle

import (
	"fmt"
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// drained returns the names a drain hands out, accepting them all, with
// tokens for n of them.
func drained(q *taintQueue, clock *clocktesting.FakeClock, n int) []string {
	var got []string
	for range n {
		clock.Step(time.Second)
		q.drain(func(name string) bool {
			got = append(got, name)
			return true
		})
	}
	return got
}

func TestTaintQueueKeepsOrderAcrossForgets(t *testing.T) {
	clock := clocktesting.NewFakeClock(t0)
	q := newTaintQueue(clock, 1)
	for _, name := range []string{"a", "b", "c", "d"} {
		if !q.add(name) {
			t.Fatalf("add(%s) on an empty queue refused", name)
		}
	}
	if q.add("b") {
		t.Fatal("a pending name was queued twice")
	}
	q.forget("b")
	q.forget("never-added")
	if !q.add("b") {
		t.Fatal("a forgotten name could not be queued again")
	}
	if got, want := drained(q, clock, 5), []string{"a", "c", "d", "b"}; !slices.Equal(got, want) {
		t.Fatalf("drained %v, want %v", got, want)
	}
	if !q.processed("a") || q.add("a") {
		t.Fatal("a processed name is queued again before it is forgotten")
	}
	q.forget("a")
	if q.processed("a") || !q.add("a") {
		t.Fatal("a forgotten processed name cannot be queued again")
	}
	if got := drained(q, clock, 2); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("drained %v, want [a]", got)
	}
}

// A refused name goes to the back and keeps being offered.
func TestTaintQueueRetriesRefusedNames(t *testing.T) {
	clock := clocktesting.NewFakeClock(t0)
	q := newTaintQueue(clock, 1)
	q.add("a")
	q.add("b")
	refused := 0
	var got []string
	for range 4 {
		clock.Step(time.Second)
		q.drain(func(name string) bool {
			if name == "a" && refused == 0 {
				refused++
				return false
			}
			got = append(got, name)
			return true
		})
	}
	if !slices.Equal(got, []string{"b", "a"}) {
		t.Fatalf("drained %v, want [b a]", got)
	}
}

// Places left by forgotten names are dropped, so a queue whose nodes keep
// flapping does not grow while nothing drains it (rate 0).
func TestTaintQueueDropsForgottenPlaces(t *testing.T) {
	clock := clocktesting.NewFakeClock(t0)
	q := newTaintQueue(clock, 0)
	for i := range 10_000 {
		name := fmt.Sprint("n", i%10)
		q.add(name)
		q.forget(name)
	}
	q.add("last")
	if len(q.pending) > 130 {
		t.Fatalf("%d places held for 1 queued name", len(q.pending))
	}
	q.setRate(1)
	if got := drained(q, clock, 2); !slices.Equal(got, []string{"last"}) {
		t.Fatalf("drained %v, want [last]", got)
	}
}
