package leasecopy

import "sync"

// lastSeen remembers, per lease (namespace/name), the target's copy as
// this process last read or wrote it, with the version a conditional
// write needs. A mirror is usually the target's only writer of a lease
// until the switch, so the remembered version is usually current: a
// renewal then costs one conditional write instead of a read and a write.
// When it is not (someone else wrote), the write fails on its version
// check and the target is read again, so what is remembered only saves
// round trips and never decides a write on its own.
//
// A worker owns a lease while it handles it (the workqueue never hands
// one lease to two workers), so only the map needs a lock.
type lastSeen[V any] struct {
	mu sync.Mutex
	m  map[string]V
}

func (s *lastSeen[V]) get(key string) (V, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	return v, ok
}

func (s *lastSeen[V]) put(key string, v V) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]V{}
	}
	s.m[key] = v
}

func (s *lastSeen[V]) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}
