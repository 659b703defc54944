package discovery

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/leasehold/leasehold/internal/registry"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apidiscoveryv2beta1 "k8s.io/api/apidiscovery/v2beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// aggregatedKind is the kind clients name in Accept (as=...) to ask for
// aggregated discovery.
const aggregatedKind = "APIGroupDiscoveryList"

// aggregatedAllowed is the restriction of /api and /apis: the plain document,
// or the aggregated list in one of the two versions clients ask for (v2 since
// Kubernetes 1.30, v2beta1 from kubectl/client-go 1.26 to 1.29).
func aggregatedAllowed(target *schema.GroupVersionKind) bool {
	if target == nil {
		return true
	}
	if target.Kind != aggregatedKind {
		return false
	}
	gv := target.GroupVersion()
	return gv == apidiscoveryv2.SchemeGroupVersion || gv == apidiscoveryv2beta1.SchemeGroupVersion
}

// aggregatedList builds the apidiscovery.k8s.io/v2 list of the given groups.
// Group/version/kind in responseKind are left empty for the resource's own
// group version, as kube-apiserver does; client-go only needs the kind.
func aggregatedList(set *registry.Set, groups []groupInfo) *apidiscoveryv2.APIGroupDiscoveryList {
	out := &apidiscoveryv2.APIGroupDiscoveryList{Items: []apidiscoveryv2.APIGroupDiscovery{}}
	for _, g := range groups {
		item := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: g.name}}
		for _, v := range g.versions {
			gv := schema.GroupVersion{Group: g.name, Version: v}
			item.Versions = append(item.Versions, apidiscoveryv2.APIVersionDiscovery{
				Version:   v,
				Resources: aggregatedResources(set, gv),
				Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent,
			})
		}
		out.Items = append(out.Items, item)
	}
	return out
}

func aggregatedResources(set *registry.Set, gv schema.GroupVersion) []apidiscoveryv2.APIResourceDiscovery {
	var out []apidiscoveryv2.APIResourceDiscovery
	for _, r := range resourcesIn(set, gv) {
		scope := apidiscoveryv2.ScopeCluster
		if r.Namespaced {
			scope = apidiscoveryv2.ScopeNamespace
		}
		d := apidiscoveryv2.APIResourceDiscovery{
			Resource:         r.Resource,
			ResponseKind:     &metav1.GroupVersionKind{Kind: r.Kind},
			Scope:            scope,
			SingularResource: r.SingularName,
			Verbs:            verbsOf(r),
			ShortNames:       slices.Clone(r.ShortNames),
			Categories:       slices.Clone(r.Categories),
		}
		if r.StatusSubresource {
			d.Subresources = append(d.Subresources, apidiscoveryv2.APISubresourceDiscovery{
				Subresource:  statusSubresource,
				ResponseKind: &metav1.GroupVersionKind{Kind: r.Kind},
				Verbs:        slices.Clone(statusVerbs),
			})
		}
		out = append(out, d)
	}
	return out
}

// toV2beta1 converts a v2 list to v2beta1. The two versions have the same
// schema; k8s.io/api ships no conversion between them because kube-apiserver
// builds each version from its own internal model.
func toV2beta1(in *apidiscoveryv2.APIGroupDiscoveryList) *apidiscoveryv2beta1.APIGroupDiscoveryList {
	out := &apidiscoveryv2beta1.APIGroupDiscoveryList{
		ListMeta: in.ListMeta,
		Items:    make([]apidiscoveryv2beta1.APIGroupDiscovery, 0, len(in.Items)),
	}
	for _, g := range in.Items {
		group := apidiscoveryv2beta1.APIGroupDiscovery{ObjectMeta: g.ObjectMeta}
		for _, v := range g.Versions {
			ver := apidiscoveryv2beta1.APIVersionDiscovery{
				Version:   v.Version,
				Freshness: apidiscoveryv2beta1.DiscoveryFreshness(v.Freshness),
			}
			for _, r := range v.Resources {
				res := apidiscoveryv2beta1.APIResourceDiscovery{
					Resource:         r.Resource,
					ResponseKind:     r.ResponseKind,
					Scope:            apidiscoveryv2beta1.ResourceScope(r.Scope),
					SingularResource: r.SingularResource,
					Verbs:            r.Verbs,
					ShortNames:       r.ShortNames,
					Categories:       r.Categories,
				}
				for _, s := range r.Subresources {
					res.Subresources = append(res.Subresources, apidiscoveryv2beta1.APISubresourceDiscovery{
						Subresource:   s.Subresource,
						ResponseKind:  s.ResponseKind,
						AcceptedTypes: s.AcceptedTypes,
						Verbs:         s.Verbs,
					})
				}
				ver.Resources = append(ver.Resources, res)
			}
			group.Versions = append(group.Versions, ver)
		}
		out.Items = append(out.Items, group)
	}
	return out
}

// aggregatedFor returns the aggregated list in the requested version.
func aggregatedFor(list *apidiscoveryv2.APIGroupDiscoveryList, gv schema.GroupVersion) runtime.Object {
	if gv == apidiscoveryv2beta1.SchemeGroupVersion {
		return toV2beta1(list)
	}
	return list
}

// aggregatedETag is the entity tag of an aggregated document: the SHA-512 of
// its JSON form in upper-case hex, as kube-apiserver computes it. It does not
// depend on the negotiated encoding or version: responses carry
// "Vary: Accept", so caches keep one entry per Accept header anyway.
func aggregatedETag(list *apidiscoveryv2.APIGroupDiscoveryList) (string, error) {
	data, err := json.Marshal(list)
	if err != nil {
		return "", fmt.Errorf("hashing aggregated discovery document: %w", err)
	}
	return fmt.Sprintf("%X", sha512.Sum512(data)), nil
}
