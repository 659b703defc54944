package storagetest

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/leasehold/leasehold/internal/storage"
)

func testGuaranteedUpdateConcurrent(t *testing.T, s storage.Interface) {
	ctx := testContext(t)
	p := prefixFor(t)
	const (
		workers    = 32
		increments = 8
	)
	key := p + "counter"
	mustCreate(ctx, t, s, key, "0")

	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range increments {
				_, err := storage.GuaranteedUpdate(ctx, s, key, func(cur storage.KeyValue) ([]byte, error) {
					n, err := strconv.Atoi(string(cur.Value))
					if err != nil {
						return nil, fmt.Errorf("counter value %q: %w", cur.Value, err)
					}
					return []byte(strconv.Itoa(n + 1)), nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("GuaranteedUpdate: %v", err)
	}
	kv := mustGet(ctx, t, s, key)
	if got, want := string(kv.Value), strconv.Itoa(workers*increments); got != want {
		t.Fatalf("counter = %s after %d increments, want %s", got, workers*increments, want)
	}
	if kv.ModRevision-kv.CreateRevision != workers*increments {
		t.Fatalf("counter went through %d revisions, want exactly %d successful updates",
			kv.ModRevision-kv.CreateRevision, workers*increments)
	}
}

func testCreateConcurrent(t *testing.T, s storage.Interface) {
	ctx := testContext(t)
	p := prefixFor(t)
	const racers = 16
	before := currentRevision(ctx, t, s)
	key := p + "contested"

	type outcome struct {
		who int
		rev int64
		err error
	}
	results := make(chan outcome, racers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			<-start
			rev, err := s.Create(ctx, key, []byte(strconv.Itoa(i)))
			results <- outcome{who: i, rev: rev, err: err}
		})
	}
	close(start)
	wg.Wait()
	close(results)

	winners := 0
	var winner outcome
	for r := range results {
		switch {
		case r.err == nil:
			winners++
			winner = r
		case errors.Is(r.err, storage.ErrKeyExists):
		default:
			t.Fatalf("racer %d: unexpected error %v", r.who, r.err)
		}
	}
	if winners != 1 {
		t.Fatalf("%d racers created the key, want exactly 1", winners)
	}
	if winner.rev != before+1 {
		t.Fatalf("winning Create at revision %d, want %d", winner.rev, before+1)
	}
	checkKV(t, "Get of the contested key", mustGet(ctx, t, s, key), key, strconv.Itoa(winner.who), winner.rev, winner.rev)
	if cur := currentRevision(ctx, t, s); cur != before+1 {
		t.Fatalf("CurrentRevision %d after one successful Create, want %d", cur, before+1)
	}
}
