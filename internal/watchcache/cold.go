package watchcache

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"
	"k8s.io/apimachinery/pkg/runtime"
)

// Cold entries.
//
// Why: the cache holds every object decoded, and a decoded object costs
// several times its stored size (a registered Node: about 1.6 KB stored,
// several KB decoded, all of it pointers the garbage collector scans on
// every cycle). Most objects are not written for minutes (Nodes between
// status reports, Events until they expire) and are rarely read whole, while
// leases, the bulk of all writes, change every few seconds. So an entry left
// unchanged for Options.ColdAfter is kept as its stored form compressed with
// zstd, and decoded again on each read.
//
// Stored objects of one resource are nearly identical (the same labels,
// conditions and managedFields, names differing by a few characters), so
// each resource ("class": the key's first segment under the cache's prefix)
// gets a raw dictionary: the stored form of the first object of the class
// that went cold. Against it a Node compresses from about 1,594 B to about
// 76 B, a Lease from 507 B to 139 B (zstd alone: 662 B and 385 B).
//
// A class's dictionary is the first object of its resource to go cold,
// which need not look like the rest: a bare Node created by hand before a
// fleet registered made 20,000 fleet Nodes compress to about 590 B each
// instead of 76 (heap-per-node.sh, 2026-11-28). So a class counts what it
// compresses, and once it has compressed retrainAfter values, if they
// average more than a third of their stored size (a fitting dictionary
// gives Nodes 5%, Leases 27%, Events about 20%; zstd alone Nodes 42%,
// Leases 76%), its resource gets a new class whose dictionary is the value
// being compressed then, one of the bulk. Values of the old class keep its
// index and still decode. A resource is retrained at most once, so one
// that simply compresses badly costs one class more, not a class per
// thousand values.
//
// A cold value is one byte naming the class (its index in coldStore.classes)
// followed by one zstd frame. Classes are only ever added, so an index stays
// valid for the cache's lifetime; at most maxColdClasses exist, and a key of
// a further class simply stays decoded.

// maxColdClasses bounds the classes: a class is named by one byte.
const maxColdClasses = 255

// retrainAfter is how many values a class compresses before it judges its
// dictionary (see above).
const retrainAfter = 1000

// coldClass compresses and decompresses the cold values of one resource.
// Both coders are safe for concurrent use and, used only through EncodeAll
// and DecodeAll, start no goroutines: they need no closing.
type coldClass struct {
	name string
	enc  *zstd.Encoder
	dec  *zstd.Decoder
	// values, stored and compressed count what the class compressed, in
	// number and bytes; retrained says it replaced a class of its resource
	// (and is not judged again). Only the demoter compresses, but tests
	// and readers may look: atomics.
	values, stored, compressed atomic.Int64
	retrained                  bool
	// rewrites counts the writes that found a value of the class cold
	// (the demoter's holds, demote.go).
	rewrites atomic.Int64
}

// coldStore holds the classes. Classes are created by the demoter alone
// (one goroutine) and read by any reader through the published slice.
type coldStore struct {
	prefix  string
	mu      sync.Mutex // serializes class creation
	byName  map[string]int
	classes atomic.Pointer[[]*coldClass]
	bufs    sync.Pool // *thawBuffers
	// replaced, if set, is told of every class replaced for an unfit
	// dictionary (the cache logs it).
	replaced func(name string, values, stored, compressed int64)
}

func newColdStore(prefix string) *coldStore {
	s := &coldStore{prefix: prefix, byName: map[string]int{}}
	s.classes.Store(&[]*coldClass{})
	return s
}

// className is the key's resource prefix: the cache prefix and the key's
// first segment under it, or the cache prefix alone for keys with one
// segment.
func (s *coldStore) className(key string) string {
	rest, ok := strings.CutPrefix(key, s.prefix)
	if !ok {
		return s.prefix
	}
	i := strings.IndexByte(rest, '/')
	if i < 0 {
		return s.prefix
	}
	return key[:len(s.prefix)+i+1]
}

// classFor returns the index of key's class, creating the class with stored
// as its dictionary when it is new; errTooManyClasses when no further class
// fits.
func (s *coldStore) classFor(key string, stored []byte) (int, error) {
	name := s.className(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if i, ok := s.byName[name]; ok {
		return i, nil
	}
	classes := *s.classes.Load()
	if len(classes) >= maxColdClasses {
		return 0, errTooManyClasses
	}
	c, err := newColdClass(name, stored)
	if err != nil {
		return 0, err
	}
	return s.addLocked(c), nil
}

// addLocked publishes c as the class of its resource and returns its
// index. The caller holds s.mu and has checked there is room.
func (s *coldStore) addLocked(c *coldClass) int {
	classes := *s.classes.Load()
	next := append(append(make([]*coldClass, 0, len(classes)+1), classes...), c)
	s.classes.Store(&next)
	s.byName[c.name] = len(classes)
	return len(classes)
}

// newColdClass makes the class of resource name with dict as its
// dictionary.
func newColdClass(name string, dict []byte) (*coldClass, error) {
	// The dictionary must outlive every value compressed against it and must
	// not alias a buffer the caller reuses.
	dict = append([]byte(nil), dict...)
	const dictID = 1
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderDictRaw(dictID, dict),
		// One demoter encodes; values are a few KB, so a small window and no
		// checksum (the bytes never leave memory) keep coders and values small.
		// Against a dictionary the fastest level compresses stored Nodes,
		// Leases and Events exactly as well as the default level (76, 139 and
		// 116 B on average at 100,000 nodes) with a quarter of its tables:
		// 0.7 instead of 2.8 MB per class, coders included.
		zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(1<<15),
		zstd.WithEncoderCRC(false),
		zstd.WithLowerEncoderMem(true))
	if err != nil {
		return nil, fmt.Errorf("creating encoder for %s: %w", name, err)
	}
	dec, err := zstd.NewReader(nil,
		zstd.WithDecoderDictRaw(dictID, dict),
		zstd.WithDecoderConcurrency(0),
		zstd.WithDecoderLowmem(true))
	if err != nil {
		return nil, fmt.Errorf("creating decoder for %s: %w", name, err)
	}
	return &coldClass{name: name, enc: enc, dec: dec}, nil
}

// judge counts a value the class at index i compressed (stored bytes
// into frame bytes) and, once it has compressed retrainAfter of them at
// more than a third of their size, replaces it for its resource with a
// class whose dictionary is stored. Errors leave the class as it is.
func (s *coldStore) judge(i int, stored []byte, frame int) {
	c := (*s.classes.Load())[i]
	n := c.values.Add(1)
	in, out := c.stored.Add(int64(len(stored))), c.compressed.Add(int64(frame))
	if n != retrainAfter || c.retrained || 3*out <= in {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byName[c.name] != i || len(*s.classes.Load()) >= maxColdClasses {
		return
	}
	next, err := newColdClass(c.name, stored)
	if err != nil {
		return
	}
	next.retrained = true
	s.addLocked(next)
	if s.replaced != nil {
		s.replaced(c.name, n, in, out)
	}
}

var errTooManyClasses = errors.New("no room for another cold class")

// freeze returns the cold value of stored, the stored form of the object at
// key: its class's number, then the compressed frame. scratch is reused for
// the frame; the result is a string of exactly its length.
func (s *coldStore) freeze(key string, stored []byte, scratch *[]byte) (string, error) {
	i, err := s.classFor(key, stored)
	if err != nil {
		return "", err
	}
	c := (*s.classes.Load())[i]
	frame := c.enc.EncodeAll(stored, (*scratch)[:0])
	*scratch = frame
	s.judge(i, stored, len(frame))
	var out strings.Builder
	out.Grow(1 + len(frame))
	out.WriteByte(byte(i))
	out.Write(frame)
	return out.String(), nil
}

// rewritten counts, in its class, a write that found an object cold
// (cold is the object's cold value).
func (s *coldStore) rewritten(cold string) {
	if classes := *s.classes.Load(); len(cold) > 0 && int(cold[0]) < len(classes) {
		classes[cold[0]].rewrites.Add(1)
	}
}

// thaw decompresses a cold value and hands the stored form to use, which
// must not keep it (the buffer is reused).
func (s *coldStore) thaw(cold string, use func(stored []byte) (runtime.Object, error)) (runtime.Object, error) {
	classes := *s.classes.Load()
	if len(cold) == 0 || int(cold[0]) >= len(classes) {
		return nil, errors.New("cold value names no class")
	}
	c := classes[cold[0]]
	b, _ := s.bufs.Get().(*thawBuffers)
	if b == nil {
		b = new(thawBuffers)
	}
	defer s.bufs.Put(b)
	// The decoder reads a []byte: the frame is copied into a reused buffer
	// rather than aliased, so that nothing can write into a cold value.
	b.frame = append(b.frame[:0], cold[1:]...)
	stored, err := c.dec.DecodeAll(b.frame, b.stored[:0])
	if err != nil {
		return nil, fmt.Errorf("decompressing cold %s value: %w", c.name, err)
	}
	b.stored = stored
	return use(stored)
}

// thawBuffers are a thaw's reused buffers: the compressed frame it reads
// and the stored form it writes.
type thawBuffers struct {
	frame, stored []byte
}
