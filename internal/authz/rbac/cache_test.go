package rbac

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/request"
	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/storage/embedded"
	"github.com/leasehold/leasehold/internal/testdeps"
	"github.com/leasehold/leasehold/internal/watchcache"
)

// decode stands in for the server's storage decoder: JSON by key prefix.
func decode(key string, value []byte, _ int64, _ runtime.Object) (runtime.Object, error) {
	var obj runtime.Object
	switch k, ok := kindOf(key); {
	case !ok:
		obj = &coordinationv1.Lease{}
	case k == clusterRoles:
		obj = &rbacv1.ClusterRole{}
	case k == clusterRoleBindings:
		obj = &rbacv1.ClusterRoleBinding{}
	case k == roles:
		obj = &rbacv1.Role{}
	default:
		obj = &rbacv1.RoleBinding{}
	}
	if err := json.Unmarshal(value, obj); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", key, err)
	}
	return obj, nil
}

func keyOf(obj metav1.Object) string {
	var prefix string
	switch obj.(type) {
	case *rbacv1.ClusterRole:
		prefix = ClusterRolesPrefix
	case *rbacv1.ClusterRoleBinding:
		prefix = ClusterRoleBindingsPrefix
	case *rbacv1.Role:
		prefix = RolesPrefix
	case *rbacv1.RoleBinding:
		prefix = RoleBindingsPrefix
	default:
		prefix = "/registry/leases/"
	}
	if obj.GetNamespace() != "" {
		return prefix + obj.GetNamespace() + "/" + obj.GetName()
	}
	return prefix + obj.GetName()
}

type fixture struct {
	t     *testing.T
	store storage.Interface
	src   *CacheSource
	revs  map[string]int64
}

func put(f *fixture, obj metav1.Object) {
	f.t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		f.t.Fatal(err)
	}
	key := keyOf(obj)
	var rev int64
	if old, ok := f.revs[key]; ok {
		rev, err = f.store.Update(context.Background(), key, old, b)
	} else {
		rev, err = f.store.Create(context.Background(), key, b)
	}
	if err != nil {
		f.t.Fatalf("writing %s: %v", key, err)
	}
	f.revs[key] = rev
}

func remove(f *fixture, obj metav1.Object) {
	f.t.Helper()
	key := keyOf(obj)
	if _, _, err := f.store.Delete(context.Background(), key, f.revs[key]); err != nil {
		f.t.Fatalf("deleting %s: %v", key, err)
	}
	delete(f.revs, key)
}

// startSource runs a store, a watch cache over it and a CacheSource until
// the test ends; objs are stored before the source starts.
func startSource(t *testing.T, objs ...metav1.Object) *fixture {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	store, err := embedded.Open(t.TempDir(), embedded.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, store: store, revs: map[string]int64{}}
	for _, o := range objs {
		put(f, o)
	}
	cache := watchcache.New(store, watchcache.Options{Prefix: "/registry/", Decode: decode, Logger: quiet})
	f.src = NewCacheSource(cache, quiet)
	ctx, cancel := context.WithCancel(context.Background())
	cacheDone, srcDone := make(chan error, 1), make(chan error, 1)
	go func() { cacheDone <- cache.Run(ctx) }()
	go func() { srcDone <- f.src.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-srcDone; err != nil {
			t.Errorf("CacheSource.Run: %v", err)
		}
		if err := <-cacheDone; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("cache.Run: %v", err)
		}
		if err := store.Close(); err != nil {
			t.Errorf("closing store: %v", err)
		}
	})
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := f.src.WaitSynced(wctx); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestCacheSourceFollowsTheCache(t *testing.T) {
	f := startSource(t,
		role("apps", "elector", rule(strs("get", "update"), leaseGroup, strs("leases"))),
		roleBinding("apps", "elector", "Role", "elector", user("elector")),
		// Not RBAC: must not disturb the source.
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "my-app"}},
	)
	z := NewAuthorizer(f.src)
	ask := func(u string) (authz.Decision, string) {
		d, reason, err := z.Authorize(context.Background(), &request.Attributes{
			User: request.User{Name: u}, ResourceRequest: true, Verb: "update", APIGroup: "coordination.k8s.io", Namespace: "apps", Resource: "leases", Name: "my-app"})
		if err != nil {
			t.Fatal(err)
		}
		return d, reason
	}
	// Loaded before WaitSynced returned.
	if d, reason := ask("elector"); d != authz.DecisionAllow || !strings.Contains(reason, `RoleBinding "elector/apps"`) {
		t.Fatalf("initial state: %v %q", d, reason)
	}

	// A new ClusterRoleBinding to a ClusterRole that does not exist yet,
	// then the ClusterRole.
	put(f, clusterBinding("editors", "edit-leases", group("editors")))
	put(f, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "other"}})
	testdeps.Eventually(t, 10*time.Second, 5*time.Millisecond, "the missing ClusterRole in the reason", func() bool {
		_, _, err := z.Authorize(context.Background(), &request.Attributes{User: request.User{Name: "x", Groups: strs("editors")}, ResourceRequest: true, Verb: "get"})
		reason := NewRulesReviewer(f.src).RulesFor(context.Background(), request.User{Name: "x", Groups: strs("editors")}, "").EvaluationError
		return err == nil && reason == `clusterrole.rbac.authorization.k8s.io "edit-leases" not found`
	})
	put(f, clusterRole("edit-leases", rule(strs("*"), leaseGroup, strs("leases"))))
	put(f, clusterBinding("editors", "edit-leases", group("editors"), user("bob")))
	testdeps.Eventually(t, 10*time.Second, 5*time.Millisecond, "bob allowed", func() bool { d, _ := ask("bob"); return d == authz.DecisionAllow })

	// Updates and deletions take permissions away.
	put(f, role("apps", "elector", rule(strs("get"), leaseGroup, strs("leases"))))
	testdeps.Eventually(t, 10*time.Second, 5*time.Millisecond, "elector's update refused", func() bool { d, _ := ask("elector"); return d == authz.DecisionNoOpinion })
	remove(f, clusterBinding("editors", "", nil...))
	testdeps.Eventually(t, 10*time.Second, 5*time.Millisecond, "bob refused", func() bool { d, _ := ask("bob"); return d == authz.DecisionNoOpinion })
	if got := len(f.src.Policy().ClusterRoleBindings()); got != 0 {
		t.Errorf("%d ClusterRoleBindings left", got)
	}
	if _, ok := f.src.Policy().ClusterRole("edit-leases"); !ok {
		t.Error("ClusterRole edit-leases gone")
	}
}

// Before the first load the policy is empty, and Run returns when its
// context ends even if the cache never becomes ready.
func TestCacheSourceBeforeSync(t *testing.T) {
	cache := watchcache.New(nil, watchcache.Options{Window: 1})
	src := NewCacheSource(cache, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if n := len(src.Policy().ClusterRoleBindings()); n != 0 {
		t.Fatalf("%d bindings before sync", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := src.WaitSynced(ctx); err == nil {
		t.Fatal("WaitSynced returned before any load")
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(runCtx) }()
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
}
