package robustness

import (
	"context"
	"fmt"
	"math/rand"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// event is one watch event as a watcher saw it.
type event struct {
	Type  watch.EventType `json:"type"`
	Key   string          `json:"key"`
	Value string          `json:"value"`
	RV    int64           `json:"rv"`
	UID   string          `json:"uid"`
}

// bookmark is a bookmark's resourceVersion and how many events came
// before it in its stream.
type bookmark struct {
	RV    int64 `json:"rv"`
	After int   `json:"after"`
}

// stream is one watch request from a resourceVersion and what it gave.
type stream struct {
	Watcher   int        `json:"watcher"`
	StartRV   int64      `json:"startRV"`
	Events    []event    `json:"events,omitempty"`
	Bookmarks []bookmark `json:"bookmarks,omitempty"`
	// Gone: answered 410 (the start is no longer kept).
	Gone bool `json:"gone,omitempty"`
	// End says how it ended.
	End string `json:"end"`
	// Replay: one of the final watches, which must reach ReachRV.
	Replay  bool  `json:"replay,omitempty"`
	ReachRV int64 `json:"reachRV,omitempty"`
}

// covered is the last resourceVersion the stream is known to have
// delivered everything up to: its last event or bookmark.
func (s *stream) covered() int64 {
	c := s.StartRV
	if n := len(s.Events); n > 0 {
		c = max(c, s.Events[n-1].RV)
	}
	if n := len(s.Bookmarks); n > 0 {
		c = max(c, s.Bookmarks[n-1].RV)
	}
	return c
}

// watches collects every stream of every watcher.
type watches struct {
	mu      sync.Mutex
	streams []*stream
}

func (w *watches) add(s *stream) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.streams = append(w.streams, s)
}

func (w *watches) snapshot() []*stream {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]*stream(nil), w.streams...)
}

// watcher watches the namespace until ctx ends: from a list's
// resourceVersion, then resuming from the last one covered whenever a
// stream ends, sometimes from an older one it saw (to replay), and from a
// new list after a 410.
type watcher struct {
	id  int
	c   kubernetes.Interface
	rng *rand.Rand
	w   *watches
}

func (w *watcher) run(ctx context.Context) {
	var rv int64
	var seen []int64 // resourceVersions covered, to resume from an older one
	for ctx.Err() == nil {
		if rv == 0 {
			var err error
			if rv, err = listRV(ctx, w.c); err != nil {
				sleep(ctx, 200*time.Millisecond)
				continue
			}
		}
		start := rv
		if len(seen) > 0 && w.rng.Intn(5) == 0 {
			start = seen[w.rng.Intn(len(seen))]
		}
		s := watchFrom(ctx, w.c, w.id, start, 2+w.rng.Intn(8))
		w.w.add(s)
		switch {
		case s.Gone:
			rv = 0
		case s.covered() > rv:
			rv = s.covered()
			seen = append(seen, rv)
		}
		if len(s.Events) == 0 && s.End != "timeout" {
			sleep(ctx, 100*time.Millisecond) // the server is down or paused
		}
	}
}

// listRV is a consistent list's resourceVersion.
func listRV(ctx context.Context, c kubernetes.Interface) (int64, error) {
	octx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	l, err := c.CoordinationV1().Leases(namespace).List(octx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(l.ResourceVersion, 10, 64)
}

// watchFrom runs one watch stream from rv for about seconds (the server
// ends it) and records it; a stream cut off by a fault ends earlier.
func watchFrom(ctx context.Context, c kubernetes.Interface, id int, rv int64, seconds int) *stream {
	return watchStream(ctx, c, &stream{Watcher: id, StartRV: rv}, seconds)
}

// watchStream runs the watch s describes and fills in what it gave.
func watchStream(ctx context.Context, c kubernetes.Interface, s *stream, seconds int) *stream {
	rv := s.StartRV
	timeout := int64(seconds)
	// A paused server would hold the stream forever: bound it locally too.
	sctx, cancel := context.WithTimeout(ctx, time.Duration(seconds)*time.Second+5*time.Second)
	defer cancel()
	wi, err := c.CoordinationV1().Leases(namespace).Watch(sctx, metav1.ListOptions{
		ResourceVersion: strconv.FormatInt(rv, 10), AllowWatchBookmarks: true, TimeoutSeconds: &timeout,
	})
	if err != nil {
		s.Gone = apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
		s.End = "error: " + err.Error()
		return s
	}
	defer wi.Stop()
	for {
		select {
		case e, ok := <-wi.ResultChan():
			if !ok {
				s.End = "closed"
				if sctx.Err() != nil {
					s.End = "cancelled"
				}
				return s
			}
			switch e.Type {
			case watch.Error:
				st, _ := e.Object.(*metav1.Status)
				if st != nil && st.Code == http.StatusGone {
					s.Gone = true
				}
				s.End = fmt.Sprintf("error event: %v", e.Object)
				return s
			case watch.Bookmark:
				l, ok := e.Object.(*coordinationv1.Lease)
				if !ok {
					s.End = fmt.Sprintf("bookmark of %T", e.Object)
					return s
				}
				b, _ := strconv.ParseInt(l.ResourceVersion, 10, 64)
				s.Bookmarks = append(s.Bookmarks, bookmark{RV: b, After: len(s.Events)})
			default:
				l, ok := e.Object.(*coordinationv1.Lease)
				if !ok {
					s.End = fmt.Sprintf("event of %T", e.Object)
					return s
				}
				o := objectOutput(l)
				s.Events = append(s.Events, event{Type: e.Type, Key: l.Name, Value: o.Value, RV: o.RV, UID: o.UID})
				if s.Replay && o.RV >= s.ReachRV {
					s.End = "reached"
					return s
				}
			}
			if s.Replay && s.covered() >= s.ReachRV {
				s.End = "reached"
				return s
			}
		case <-sctx.Done():
			s.End = "timeout"
			return s
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// checkWatches checks every stream against the others and against the
// acknowledged writes, and returns the violations found.
func checkWatches(streams []*stream, records []record) []string {
	var v []string
	bad := func(format string, args ...any) {
		if len(v) < 50 {
			v = append(v, fmt.Sprintf(format, args...))
		}
	}
	// The union of what every stream saw, one event per resourceVersion.
	union := map[int64]event{}
	for i, s := range streams {
		last := s.StartRV
		state := map[string]event{} // per key, the last event in this stream
		for j, e := range s.Events {
			for _, b := range s.Bookmarks {
				if b.After == j {
					last = max(last, b.RV)
				}
			}
			if e.RV <= last {
				bad("stream %d (watcher %d from %d): event %d at rv %d after rv %d: out of order, duplicate or behind a bookmark", i, s.Watcher, s.StartRV, j, e.RV, last)
			}
			last = max(last, e.RV)
			if u, ok := union[e.RV]; ok && u != e {
				bad("rv %d: stream %d (watcher %d) saw %+v, another stream %+v", e.RV, i, s.Watcher, e, u)
			}
			union[e.RV] = e
			prev, seen := state[e.Key]
			switch {
			case !seen:
			case e.Type == watch.Added && prev.Type != watch.Deleted:
				bad("stream %d (watcher %d): %s ADDED at rv %d while present since rv %d", i, s.Watcher, e.Key, e.RV, prev.RV)
			case e.Type != watch.Added && prev.Type == watch.Deleted:
				bad("stream %d (watcher %d): %s %s at rv %d while deleted at rv %d", i, s.Watcher, e.Key, e.Type, e.RV, prev.RV)
			case e.Type == watch.Deleted && e.Value != prev.Value:
				bad("stream %d (watcher %d): %s DELETED at rv %d with value %s, last value %s", i, s.Watcher, e.Key, e.RV, e.Value, prev.Value)
			}
			state[e.Key] = e
		}
		// Bookmarks never go backwards: not behind the start, the event
		// before them, nor the bookmark before them.
		floor := s.StartRV
		for _, b := range s.Bookmarks {
			if b.After > 0 {
				floor = max(floor, s.Events[b.After-1].RV)
			}
			if b.RV < floor {
				bad("stream %d (watcher %d from %d): bookmark %d after %d events went back below %d", i, s.Watcher, s.StartRV, b.RV, b.After, floor)
			}
			floor = max(floor, b.RV)
		}
		if s.Replay && !s.Gone && s.covered() < s.ReachRV {
			bad("replay stream %d from %d stopped at %d (%s) before reaching %d", i, s.StartRV, s.covered(), s.End, s.ReachRV)
		}
	}
	// The acknowledged writes, by the resourceVersion they were answered.
	acked := map[int64]record{}
	for _, r := range records {
		if r.Out.Result == resOK && r.Out.RV != 0 && (r.In.Kind == opCreate || r.In.Kind == opUpdate || r.In.Kind == opPatch) {
			acked[r.Out.RV] = r
			if e, ok := union[r.Out.RV]; ok && (e.Key != r.In.Key || e.Value != r.In.Value || e.Type == watch.Deleted) {
				bad("rv %d: %s(%s, %s) was answered at it, watchers saw %+v", r.Out.RV, r.In.Kind, r.In.Key, r.In.Value, e)
			}
		}
	}
	rvs := make([]int64, 0, len(union)+len(acked))
	for rv := range union {
		rvs = append(rvs, rv)
	}
	for rv := range acked {
		if _, ok := union[rv]; !ok {
			rvs = append(rvs, rv)
		}
	}
	sort.Slice(rvs, func(i, j int) bool { return rvs[i] < rvs[j] })
	// Completeness: a stream delivers everything between its start and
	// what it covered.
	for i, s := range streams {
		got := map[int64]bool{}
		for _, e := range s.Events {
			got[e.RV] = true
		}
		from := sort.Search(len(rvs), func(j int) bool { return rvs[j] > s.StartRV })
		for _, rv := range rvs[from:] {
			if rv > s.covered() {
				break
			}
			if got[rv] {
				continue
			}
			if e, ok := union[rv]; ok {
				bad("stream %d (watcher %d from %d, covered to %d): missed the %s of %s at rv %d that another watcher saw (a gap)", i, s.Watcher, s.StartRV, s.covered(), e.Type, e.Key, rv)
			} else {
				r := acked[rv]
				bad("stream %d (watcher %d from %d, covered to %d): missed the acknowledged %s(%s, %s) at rv %d", i, s.Watcher, s.StartRV, s.covered(), r.In.Kind, r.In.Key, r.In.Value, rv)
			}
		}
	}
	return v
}
