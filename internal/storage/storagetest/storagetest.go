// Package storagetest is the conformance suite every storage.Interface driver
// must pass. A driver's test calls Run with a constructor for a fresh, empty
// store.
//
// The suite only assumes what storage.Interface promises, so a driver backed by
// a shared server (etcd) can run it unchanged:
//   - revisions are compared relative to CurrentRevision before the test wrote,
//     never as absolute numbers;
//   - every subtest writes under its own key prefix and runs sequentially, so a
//     "+1 per write" check is not disturbed by another subtest;
//   - compaction boundaries are probed only where etcd and the embedded driver
//     agree (a List below the compacted revision, a Watch well below it).
package storagetest

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/storage"
)

// Run runs every conformance subtest; newStore must return a fresh store that
// the subtest may write to freely. The suite closes nothing: newStore registers
// its own cleanup (t.Cleanup) so the driver decides how it is torn down.
func Run(t *testing.T, newStore func(t *testing.T) storage.Interface) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(t *testing.T, s storage.Interface)
	}{
		{"create", testCreate},
		{"get", testGet},
		{"create-exists", testCreateExists},
		{"update", testUpdate},
		{"update-conflict", testUpdateConflict},
		{"update-missing", testUpdateMissing},
		{"delete", testDelete},
		{"delete-conditional", testDeleteConditional},
		{"list-prefix", testListPrefix},
		{"list-paging", testListPaging},
		{"list-at-revision", testListAtRevision},
		{"list-future-revision", testListFutureRevision},
		{"watch-from-revision", testWatchFromRevision},
		{"watch-prefix", testWatchPrefix},
		{"watch-live", testWatchLive},
		{"watch-without-prev-value", testWatchWithoutPrevValue},
		{"compact", testCompact},
		{"revision-increments", testRevisionIncrements},
		{"guaranteed-update-concurrent", testGuaranteedUpdateConcurrent},
		{"create-concurrent", testCreateConcurrent},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t)
			c.fn(t, s)
		})
	}
}

// testTimeout bounds every subtest so a driver that hangs fails instead of
// stalling the whole test binary.
const testTimeout = 30 * time.Second

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}
