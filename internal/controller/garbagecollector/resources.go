package garbagecollector

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/leasehold/leasehold/internal/registry"
)

// resources maps owner references and storage keys to served resources.
type resources struct {
	all    []*registry.Resource
	byKind map[schema.GroupKind]*registry.Resource
	// prefix is the longest common prefix of every resource's keys: the
	// one watch the graph needs.
	prefix string
}

func newResources(set *registry.Set) *resources {
	r := &resources{byKind: map[schema.GroupKind]*registry.Resource{}}
	for i, res := range set.All() {
		r.all = append(r.all, res)
		// The first registration of a kind wins: an object is the same
		// object whichever served version names it.
		if _, ok := r.byKind[res.GroupVersionKind().GroupKind()]; !ok {
			r.byKind[res.GroupVersionKind().GroupKind()] = res
		}
		p := res.KeyPrefix("")
		if i == 0 {
			r.prefix = p
			continue
		}
		for !strings.HasPrefix(p, r.prefix) {
			r.prefix = r.prefix[:len(r.prefix)-1]
		}
	}
	return r
}

// forKey returns the resource a storage key belongs to.
func (r *resources) forKey(key string) (*registry.Resource, bool) {
	for _, res := range r.all {
		if strings.HasPrefix(key, res.KeyPrefix("")) {
			return res, true
		}
	}
	return nil, false
}

// forRef returns the served resource an owner reference names, by group and
// kind (the version in apiVersion does not change which object it is).
func (r *resources) forRef(ref metav1.OwnerReference) (*registry.Resource, bool) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, false
	}
	res, ok := r.byKind[schema.GroupKind{Group: gv.Group, Kind: ref.Kind}]
	return res, ok
}

// ownerKey resolves an owner reference of a dependent in namespace
// depNamespace (cluster-scoped dependents pass depNamespaced=false). ok is
// false when the owner cannot be looked up: its kind is not served, or a
// cluster-scoped dependent names a namespaced owner kind (invalid=true).
func (r *resources) ownerKey(ref metav1.OwnerReference, depNamespaced bool, depNamespace string) (res *registry.Resource, key string, ok, invalid bool) {
	res, ns, ok, invalid := r.resolveOwner(ref, depNamespaced, depNamespace)
	if !ok {
		return res, "", false, invalid
	}
	return res, res.Key(ns, ref.Name), true, false
}

// resolveOwner is ownerKey without building the key: the owner's resource
// and the namespace it is looked up in ("" for a cluster-scoped owner).
func (r *resources) resolveOwner(ref metav1.OwnerReference, depNamespaced bool, depNamespace string) (res *registry.Resource, namespace string, ok, invalid bool) {
	res, found := r.forRef(ref)
	if !found {
		return nil, "", false, false
	}
	if !res.Namespaced {
		return res, "", true, false
	}
	if !depNamespaced {
		return res, "", false, true
	}
	// A namespaced owner is always looked up in the dependent's namespace.
	return res, depNamespace, true, false
}
