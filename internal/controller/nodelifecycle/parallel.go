package nodelifecycle

import (
	"sync"
	"sync/atomic"
)

// writeWorkers bounds the API writes a pass has in flight at once, as
// kube-controller-manager's nodeUpdateWorkerSize does for its status updates.
// One write at a time waits for each write's fsync in turn: marking 10,000
// silent nodes Unknown took a 21 s pass.
const writeWorkers = 8

// inParallel calls fn(0), ..., fn(n-1) on up to writeWorkers goroutines and
// returns once every call has. fn may only write through the cluster and
// record its outcome in its own slot: the controller's state belongs to
// Run's goroutine.
func inParallel(n int, fn func(i int)) {
	if n <= 1 {
		if n == 1 {
			fn(0)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, writeWorkers) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				fn(i)
			}
		})
	}
	wg.Wait()
}
