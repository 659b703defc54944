package namespacelifecycle

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/watchcache"
)

// FromCache returns the plugin's getters over the server's watch cache,
// for namespaces described by res: cached reads it as it is; live first
// waits for it to reach the store's current revision, so it answers as a
// consistent read would.
func FromCache(c *watchcache.Cache, store storage.Interface, res *registry.Resource) (cached, live Getter) {
	cached = func(_ context.Context, name string) (*corev1.Namespace, error) {
		return namespaceIn(c, res, name)
	}
	live = func(ctx context.Context, name string) (*corev1.Namespace, error) {
		rev, err := store.CurrentRevision(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading the store's revision: %w", err)
		}
		if err := c.WaitForRevision(ctx, rev); err != nil {
			return nil, err
		}
		return namespaceIn(c, res, name)
	}
	return cached, live
}

func namespaceIn(c *watchcache.Cache, res *registry.Resource, name string) (*corev1.Namespace, error) {
	obj, ok := c.Get(res.Key("", name))
	if !ok {
		return nil, nil
	}
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return nil, fmt.Errorf("cached namespace %s is a %T", name, obj)
	}
	return ns, nil
}
