package rbac

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/leasehold/leasehold/internal/clock"
	"github.com/leasehold/leasehold/internal/watchcache"
)

// Storage key prefixes of the RBAC resources (Kubernetes' own).
const (
	ClusterRolesPrefix        = "/registry/clusterroles/"
	ClusterRoleBindingsPrefix = "/registry/clusterrolebindings/"
	RolesPrefix               = "/registry/roles/"
	RoleBindingsPrefix        = "/registry/rolebindings/"
)

// watchPrefixes are what CacheSource watches: "/registry/clusterrole"
// covers clusterroles and clusterrolebindings, "/registry/role" roles and
// rolebindings, so two watchers (not four) look at each change in the cache.
var watchPrefixes = [...]string{"/registry/clusterrole", "/registry/role"}

// kind is one of the four RBAC resources, its position in kindPrefixes.
type kind int

const (
	clusterRoles kind = iota
	clusterRoleBindings
	roles
	roleBindings
)

var kindPrefixes = [...]string{ClusterRolesPrefix, ClusterRoleBindingsPrefix, RolesPrefix, RoleBindingsPrefix}

func kindOf(key string) (kind, bool) {
	for k, p := range kindPrefixes {
		if strings.HasPrefix(key, p) {
			return kind(k), true
		}
	}
	return 0, false
}

// CacheSource keeps a Policy in step with the RBAC objects in the server's
// watch cache. Two watchers (ClusterRoles and ClusterRoleBindings; Roles and
// RoleBindings) record each change, and one builder makes a new Policy after
// a burst of changes; requests read the last one built, without locking.
// Build it with NewCacheSource and start it with Run.
type CacheSource struct {
	cache *watchcache.Cache
	log   *slog.Logger

	builder *Builder

	mu      sync.Mutex
	objects [len(kindPrefixes)]map[string]runtime.Object // by storage key
	loaded  int                                          // watch prefixes whose initial state arrived

	// snapLoaded is loaded as of the objects of the Policy last built;
	// only the builder's goroutine touches it.
	snapLoaded int

	synced chan struct{} // closed once a Policy holds every initial object
}

// NewCacheSource returns a source over cache. Until Run has loaded the
// cache's RBAC objects, Policy is empty (it allows nothing).
func NewCacheSource(cache *watchcache.Cache, log *slog.Logger) *CacheSource {
	if log == nil {
		log = slog.Default()
	}
	s := &CacheSource{
		builder: NewBuilder(),
		cache:   cache,
		log:     log.With("component", "rbac"),
		synced:  make(chan struct{}),
	}
	for i := range s.objects {
		s.objects[i] = map[string]runtime.Object{}
	}
	return s
}

// Policy implements Source.
func (s *CacheSource) Policy() *Policy { return s.builder.Policy() }

// WaitSynced blocks until the Policy holds every RBAC object the cache held
// when Run started, or ctx ends. Serve requests only after it returns, or
// early requests are judged without their bindings.
func (s *CacheSource) WaitSynced(ctx context.Context) error {
	select {
	case <-s.synced:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the RBAC policy: %w", ctx.Err())
	}
}

// Run watches the cache and rebuilds the Policy until ctx ends; it returns
// nil after its goroutines have stopped.
func (s *CacheSource) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, p := range watchPrefixes {
		wg.Go(func() { s.watch(ctx, p) })
	}
	wg.Go(func() { s.builder.Run(ctx, s.snapshot, s.markSynced) })
	wg.Wait()
	return nil
}

// watch records every change under prefix, re-watching from the current
// state whenever a watch ends early. A fresh watch's initial state replaces
// what was recorded under prefix as a whole, once it has all arrived, so a
// re-watch never shows requests a partial policy.
func (s *CacheSource) watch(ctx context.Context, prefix string) {
	first := true
	for ctx.Err() == nil {
		w, err := s.cache.Watch(ctx, watchcache.WatchOptions{Prefix: prefix, InitialState: true, Bookmarks: true})
		if err != nil {
			if ctx.Err() == nil {
				s.log.Error("watching RBAC objects", "prefix", prefix, "err", err)
				clock.Sleep(ctx, time.Second)
			}
			continue
		}
		initial := map[string]runtime.Object{}
		for ev := range w.Events() {
			switch {
			case ev.Type == watch.Bookmark && ev.InitialEventsEnd:
				s.replace(prefix, initial, first)
				initial, first = nil, false
			case ev.Type == watch.Bookmark:
			case initial != nil:
				initial[ev.Key] = ev.Object
			case ev.Type == watch.Deleted:
				s.set(ev.Key, nil)
			default:
				s.set(ev.Key, ev.Object)
			}
		}
		w.Stop()
	}
}

// replace swaps everything recorded under prefix for objs.
func (s *CacheSource) replace(prefix string, objs map[string]runtime.Object, first bool) {
	s.mu.Lock()
	for k, p := range kindPrefixes {
		if strings.HasPrefix(p, prefix) {
			s.objects[k] = map[string]runtime.Object{}
		}
	}
	for key, obj := range objs {
		if k, ok := kindOf(key); ok {
			s.objects[k][key] = obj
		}
	}
	if first {
		s.loaded++
	}
	s.mu.Unlock()
	s.builder.Changed()
}

// set records obj at key (nil: deleted).
func (s *CacheSource) set(key string, obj runtime.Object) {
	k, ok := kindOf(key)
	if !ok {
		return
	}
	s.mu.Lock()
	if obj == nil {
		delete(s.objects[k], key)
	} else {
		s.objects[k][key] = obj
	}
	s.mu.Unlock()
	s.builder.Changed()
}

// markSynced closes synced once a Policy was built from objects recorded
// after every watch prefix loaded its initial state.
func (s *CacheSource) markSynced() {
	if s.snapLoaded < len(watchPrefixes) {
		return
	}
	select {
	case <-s.synced:
	default:
		close(s.synced)
	}
}

// snapshot collects the recorded objects, and notes how many watch
// prefixes had loaded their initial state when it did.
func (s *CacheSource) snapshot() (Objects, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snapLoaded = s.loaded
	var bad []string
	o := Objects{
		ClusterRoles:        collect[*rbacv1.ClusterRole](s.objects[clusterRoles], &bad),
		ClusterRoleBindings: collect[*rbacv1.ClusterRoleBinding](s.objects[clusterRoleBindings], &bad),
		Roles:               collect[*rbacv1.Role](s.objects[roles], &bad),
		RoleBindings:        collect[*rbacv1.RoleBinding](s.objects[roleBindings], &bad),
	}
	if len(bad) > 0 {
		// The cache decodes RBAC keys to rbac/v1 types; anything else is a
		// decoding bug, and the objects are left out rather than guessed at.
		s.log.Error("ignoring RBAC objects of unexpected types", "keys", bad)
	}
	return o, true
}

// collect returns the objects of type T, and adds the keys of the others
// to bad.
func collect[T runtime.Object](objs map[string]runtime.Object, bad *[]string) []T {
	out := make([]T, 0, len(objs))
	for key, obj := range objs {
		if t, ok := obj.(T); ok {
			out = append(out, t)
		} else {
			*bad = append(*bad, key)
		}
	}
	return out
}
