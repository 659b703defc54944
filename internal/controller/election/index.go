package election

import "sync"

// candidateIndex maps each Lease to the names of the candidates that
// compete for it, so that Lease events for uncoordinated Leases are dropped
// without listing candidates. It is written by the candidate watcher and
// read by the Lease watcher.
type candidateIndex struct {
	mu    sync.Mutex
	byKey map[leaseKey]map[string]struct{}
}

func newCandidateIndex() *candidateIndex {
	return &candidateIndex{byKey: map[leaseKey]map[string]struct{}{}}
}

func (x *candidateIndex) add(k leaseKey, name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	names := x.byKey[k]
	if names == nil {
		names = map[string]struct{}{}
		x.byKey[k] = names
	}
	names[name] = struct{}{}
}

func (x *candidateIndex) remove(k leaseKey, name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.byKey[k], name)
	if len(x.byKey[k]) == 0 {
		delete(x.byKey, k)
	}
}

// reset forgets every entry (before a fresh initial state is replayed).
func (x *candidateIndex) reset() {
	x.mu.Lock()
	defer x.mu.Unlock()
	clear(x.byKey)
}

func (x *candidateIndex) has(k leaseKey) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.byKey[k]) > 0
}
