package watchcache

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"

	"github.com/leasehold/leasehold/internal/storage"
)

// memStore is a small in-memory storage.Interface (a test double of our own
// interface, not of a client): multi-version keys so List can read a past
// revision, an event history for Watch, and knobs to end watches and refuse
// new ones so tests can force the cache through re-watch and re-list.
type memStore struct {
	mu        sync.Mutex
	rev       int64
	compacted int64
	versions  map[string][]storage.KeyValue // per key, oldest first; Value nil = deleted
	history   []storage.Event
	watches   map[*memWatch]struct{}
	refuse    bool // Watch fails while set
	wg        sync.WaitGroup
}

type memWatch struct {
	prefix string
	out    chan []storage.Event
	kill   chan struct{}
	mu     sync.Mutex
	queue  []storage.Event
	wake   chan struct{}
}

func newMemStore() *memStore {
	return &memStore{versions: map[string][]storage.KeyValue{}, watches: map[*memWatch]struct{}{}}
}

var errRefused = errors.New("memstore: watch refused")

func (s *memStore) latest(key string) (storage.KeyValue, bool) {
	vs := s.versions[key]
	if len(vs) == 0 || vs[len(vs)-1].Value == nil {
		return storage.KeyValue{}, false
	}
	return vs[len(vs)-1], true
}

func (s *memStore) Get(_ context.Context, key string) (storage.KeyValue, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kv, ok := s.latest(key)
	if !ok {
		return kv, storage.ErrNotFound
	}
	return kv, nil
}

func (s *memStore) List(_ context.Context, prefix string, opts storage.ListOptions) (storage.ListResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rev := opts.Revision
	if rev == 0 {
		rev = s.rev
	}
	if rev > s.rev {
		return storage.ListResult{}, storage.ErrFutureRevision
	}
	if rev < s.compacted {
		return storage.ListResult{}, storage.ErrCompacted
	}
	var keys []string
	for k := range s.versions {
		if strings.HasPrefix(k, prefix) && k >= opts.StartKey {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	res := storage.ListResult{Revision: rev}
	for _, k := range keys {
		vs := s.versions[k]
		i := sort.Search(len(vs), func(i int) bool { return vs[i].ModRevision > rev }) - 1
		if i < 0 || vs[i].Value == nil {
			continue
		}
		if opts.Limit > 0 && len(res.KVs) == opts.Limit {
			res.More = true
			break
		}
		res.KVs = append(res.KVs, vs[i])
	}
	return res, nil
}

// record appends a write and hands its event to matching watches. s.mu held.
func (s *memStore) record(ev storage.Event) {
	s.history = append(s.history, ev)
	for w := range s.watches {
		if strings.HasPrefix(ev.Key, w.prefix) {
			w.mu.Lock()
			w.queue = append(w.queue, ev)
			w.mu.Unlock()
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}
}

func (s *memStore) Create(_ context.Context, key string, value []byte) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.latest(key); ok {
		return 0, storage.ErrKeyExists
	}
	s.rev++
	kv := storage.KeyValue{Key: key, Value: value, ModRevision: s.rev, CreateRevision: s.rev}
	s.versions[key] = append(s.versions[key], kv)
	s.record(storage.Event{Type: storage.EventPut, Key: key, Value: value, Revision: s.rev, CreateRevision: s.rev})
	return s.rev, nil
}

func (s *memStore) Update(_ context.Context, key string, expected int64, value []byte) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.latest(key)
	if !ok {
		return 0, storage.ErrNotFound
	}
	if cur.ModRevision != expected {
		return 0, storage.ErrConflict
	}
	s.rev++
	kv := storage.KeyValue{Key: key, Value: value, ModRevision: s.rev, CreateRevision: cur.CreateRevision}
	s.versions[key] = append(s.versions[key], kv)
	s.record(storage.Event{Type: storage.EventPut, Key: key, Value: value, PrevValue: cur.Value,
		Revision: s.rev, CreateRevision: cur.CreateRevision})
	return s.rev, nil
}

func (s *memStore) Delete(_ context.Context, key string, expected int64) (storage.KeyValue, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.latest(key)
	if !ok {
		return cur, 0, storage.ErrNotFound
	}
	if expected != 0 && cur.ModRevision != expected {
		return cur, 0, storage.ErrConflict
	}
	s.rev++
	s.versions[key] = append(s.versions[key], storage.KeyValue{Key: key, ModRevision: s.rev})
	s.record(storage.Event{Type: storage.EventDelete, Key: key, PrevValue: cur.Value,
		Revision: s.rev, CreateRevision: cur.CreateRevision})
	return cur, s.rev, nil
}

func (s *memStore) Watch(ctx context.Context, prefix string, from int64, _ ...storage.WatchOption) (<-chan []storage.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refuse {
		return nil, errRefused
	}
	if from < s.compacted {
		return nil, storage.ErrCompacted
	}
	w := &memWatch{prefix: prefix, out: make(chan []storage.Event), kill: make(chan struct{}), wake: make(chan struct{}, 1)}
	for _, ev := range s.history {
		if ev.Revision > from && strings.HasPrefix(ev.Key, prefix) {
			w.queue = append(w.queue, ev)
		}
	}
	s.watches[w] = struct{}{}
	s.wg.Add(1)
	go s.serve(ctx, w)
	return w.out, nil
}

// serve forwards a watch's queue to its channel until ctx ends or it is killed.
func (s *memStore) serve(ctx context.Context, w *memWatch) {
	defer s.wg.Done()
	defer close(w.out)
	defer func() {
		s.mu.Lock()
		delete(s.watches, w)
		s.mu.Unlock()
	}()
	for {
		w.mu.Lock()
		q := w.queue
		w.queue = nil
		w.mu.Unlock()
		// What queued since the last send goes as one batch, as a
		// driver's group commit does.
		if len(q) > 0 {
			select {
			case w.out <- q:
			case <-ctx.Done():
				return
			case <-w.kill:
				return
			}
		}
		select {
		case <-w.wake:
		case <-ctx.Done():
			return
		case <-w.kill:
			return
		}
	}
}

// endWatches closes every open watch, as a driver does when it must end one
// early, and while refuse is set makes new Watch calls fail. An ended watch
// leaves s.watches at once, so no write after endWatches reaches it: its
// serve goroutine may still be running, and when a wake-up and the kill are
// both ready its select picks either, which let a write made after the end
// come out on an ended watch (TestRelistAfterCompactionEndsWatchers failed
// about once in 300 runs).
func (s *memStore) endWatches(refuse bool) {
	s.mu.Lock()
	s.refuse = refuse
	for w := range s.watches {
		select {
		case <-w.kill:
		default:
			close(w.kill)
		}
		delete(s.watches, w)
	}
	s.mu.Unlock()
}

// allowWatches lets Watch succeed again.
func (s *memStore) allowWatches() {
	s.mu.Lock()
	s.refuse = false
	s.mu.Unlock()
}

func (s *memStore) CurrentRevision(context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rev, nil
}

func (s *memStore) Compact(_ context.Context, rev int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rev > s.compacted {
		s.compacted = rev
	}
	return nil
}

func (s *memStore) CompactedRevision(context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.compacted, nil
}

func (s *memStore) Close() error {
	s.endWatches(true)
	s.wg.Wait()
	return nil
}
