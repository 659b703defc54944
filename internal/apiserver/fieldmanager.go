package apiserver

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"

	"github.com/leasehold/leasehold/internal/registry"
)

// fieldManagers are apimachinery's managed-fields machinery for one
// resource, one per subresource it serves.
type fieldManagers struct {
	main, status *managedfields.FieldManager
}

func newFieldManagers(cfg Config) (map[*registry.Resource]*fieldManagers, error) {
	out := map[*registry.Resource]*fieldManagers{}
	if cfg.TypeConverter == nil {
		return out, nil
	}
	conv := runtime.UnsafeObjectConvertor(cfg.Scheme)
	for _, res := range cfg.Resources.All() {
		gvk := res.GroupVersionKind()
		main, err := managedfields.NewDefaultFieldManager(cfg.TypeConverter, conv, cfg.Scheme, cfg.Scheme, gvk, gvk.GroupVersion(), "", nil)
		if err != nil {
			return nil, fmt.Errorf("field manager for %s: %w", gvk, err)
		}
		fm := &fieldManagers{main: main}
		if res.StatusSubresource {
			if fm.status, err = managedfields.NewDefaultFieldManager(cfg.TypeConverter, conv, cfg.Scheme, cfg.Scheme, gvk, gvk.GroupVersion(), "status", nil); err != nil {
				return nil, fmt.Errorf("status field manager for %s: %w", gvk, err)
			}
		}
		out[res] = fm
	}
	return out, nil
}

func (s *Server) fieldManager(res *registry.Resource, subresource string) *managedfields.FieldManager {
	fm := s.managers[res]
	if fm == nil {
		return nil
	}
	if subresource == "status" {
		return fm.status
	}
	return fm.main
}

// updateManagedFields records manager's ownership of the fields obj sets
// relative to live (nil for a create) and returns the object to store.
func (s *Server) updateManagedFields(res *registry.Resource, subresource string, live, obj runtime.Object, manager string) (runtime.Object, error) {
	fm := s.fieldManager(res, subresource)
	if fm == nil {
		return obj, nil
	}
	if live == nil {
		live = res.New()
		live.GetObjectKind().SetGroupVersionKind(res.GroupVersionKind())
	} else if s.renewalManagedFields(res, subresource, live, obj, manager) {
		return obj, nil
	} else {
		// live is the watch cache's shared object and the field manager
		// writes to it (TypeMeta while converting): give it a copy.
		live = live.DeepCopyObject()
	}
	out := fm.UpdateNoErrors(live, obj, manager)
	out.GetObjectKind().SetGroupVersionKind(res.GroupVersionKind())
	return out, nil
}

// managerFromUserAgent derives the default field manager from the
// User-Agent, as kube-apiserver does ("kubectl/v1.33 (linux/amd64)" → "kubectl").
func managerFromUserAgent(ua string) string {
	if i := strings.IndexByte(ua, '/'); i >= 0 {
		ua = ua[:i]
	}
	if len(ua) > 128 {
		ua = ua[:128]
	}
	return ua
}
