package discovery

import (
	"crypto/sha256"
	"encoding/base64"
	"slices"
	"strings"

	"github.com/leasehold/leasehold/internal/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// Verbs served, sorted as kube-apiserver lists them in discovery.
var (
	resourceVerbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	statusVerbs   = metav1.Verbs{"get", "patch", "update"}
)

// verbsOf is a resource's verbs: a review (registry.Resource.Review) is
// only ever created, as kube-apiserver lists SelfSubjectAccessReview.
func verbsOf(r *registry.Resource) metav1.Verbs {
	if r.Review != nil {
		return metav1.Verbs{"create"}
	}
	return slices.Clone(resourceVerbs)
}

// statusSubresource is the only subresource the registry describes.
const statusSubresource = "status"

// groupInfo is one API group with its versions in preference order (the
// preferred version first), as discovery lists them.
type groupInfo struct {
	name     string
	versions []string
}

// groupsOf returns the groups of a Set in registration order of each group's
// first resource, versions sorted by Kubernetes version priority (v1 before
// v1beta1 before v1alpha1), which is how kube-apiserver picks the preferred
// version.
func groupsOf(set *registry.Set) []groupInfo {
	var groups []groupInfo
	index := map[string]int{}
	for _, gv := range set.GroupVersions() {
		i, ok := index[gv.Group]
		if !ok {
			i = len(groups)
			index[gv.Group] = i
			groups = append(groups, groupInfo{name: gv.Group})
		}
		groups[i].versions = append(groups[i].versions, gv.Version)
	}
	for i := range groups {
		slices.SortStableFunc(groups[i].versions, func(a, b string) int {
			return version.CompareKubeAwareVersionStrings(b, a)
		})
	}
	return groups
}

// coreGroup returns the legacy core group ("") if the Set serves it.
func coreGroup(groups []groupInfo) (groupInfo, bool) {
	for _, g := range groups {
		if g.name == "" {
			return g, true
		}
	}
	return groupInfo{}, false
}

// namedGroups returns the groups served under /apis.
func namedGroups(groups []groupInfo) []groupInfo {
	return slices.DeleteFunc(slices.Clone(groups), func(g groupInfo) bool { return g.name == "" })
}

// resourcesIn returns the resources of one group version sorted by plural
// name; kube-apiserver installs and lists resources in sorted path order.
func resourcesIn(set *registry.Set, gv schema.GroupVersion) []*registry.Resource {
	var out []*registry.Resource
	for _, r := range set.All() {
		if r.GroupVersion == gv {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b *registry.Resource) int { return strings.Compare(a.Resource, b.Resource) })
	return out
}

// apiVersions is the /api document.
func apiVersions(core groupInfo, addresses []metav1.ServerAddressByClientCIDR) *metav1.APIVersions {
	return &metav1.APIVersions{
		Versions:                   slices.Clone(core.versions),
		ServerAddressByClientCIDRs: addresses,
	}
}

// apiGroup is the APIGroup document of one named group.
func apiGroup(g groupInfo) *metav1.APIGroup {
	out := &metav1.APIGroup{Name: g.name}
	for _, v := range g.versions {
		out.Versions = append(out.Versions, metav1.GroupVersionForDiscovery{
			GroupVersion: schema.GroupVersion{Group: g.name, Version: v}.String(),
			Version:      v,
		})
	}
	if len(out.Versions) > 0 {
		out.PreferredVersion = out.Versions[0]
	}
	return out
}

// apiGroupList is the /apis document.
func apiGroupList(groups []groupInfo) *metav1.APIGroupList {
	out := &metav1.APIGroupList{Groups: []metav1.APIGroup{}}
	for _, g := range namedGroups(groups) {
		out.Groups = append(out.Groups, *apiGroup(g))
	}
	return out
}

// apiResourceList is the document of one group version. Subresources are
// listed as "<plural>/<subresource>" entries right after their resource, the
// order of kube-apiserver's sorted paths.
func apiResourceList(set *registry.Set, gv schema.GroupVersion) *metav1.APIResourceList {
	out := &metav1.APIResourceList{GroupVersion: gv.String(), APIResources: []metav1.APIResource{}}
	for _, r := range resourcesIn(set, gv) {
		out.APIResources = append(out.APIResources, metav1.APIResource{
			Name:               r.Resource,
			SingularName:       r.SingularName,
			Namespaced:         r.Namespaced,
			Kind:               r.Kind,
			Verbs:              verbsOf(r),
			ShortNames:         slices.Clone(r.ShortNames),
			Categories:         slices.Clone(r.Categories),
			StorageVersionHash: storageVersionHash(r),
		})
		if r.StatusSubresource {
			out.APIResources = append(out.APIResources, metav1.APIResource{
				Name:       r.Resource + "/" + statusSubresource,
				Namespaced: r.Namespaced,
				Kind:       r.Kind,
				Verbs:      slices.Clone(statusVerbs),
			})
		}
	}
	return out
}

// storageVersionHash is the opaque token kube-apiserver publishes so that the
// storage version migrator can notice a change of storage version: the first
// eight bytes of sha256("<group>/<version>/<kind>") in standard base64. Each
// resource here is stored in the version it is served in; reviews are not
// stored and have none.
func storageVersionHash(r *registry.Resource) string {
	if r.Review != nil {
		return ""
	}
	gvk := r.GroupVersionKind()
	sum := sha256.Sum256([]byte(gvk.Group + "/" + gvk.Version + "/" + gvk.Kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}
