// Package registry describes the resources Leasehold serves. A Resource holds
// everything the generic request path in internal/apiserver needs to serve one
// kind: its names, scope, how to make empty objects, how to validate and
// prepare them, which fields selectors may use, and its table columns.
//
// Invariants: descriptors are immutable after construction, the per-resource
// functions are pure (no I/O), and every Resource's New/NewList return the
// versioned k8s.io/api types registered in the scheme from served.NewScheme, so the
// apimachinery codecs can encode them in JSON, YAML and protobuf.
package registry

import (
	"context"
	"fmt"
	"strings"

	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/leasehold/leasehold/internal/request"
)

// Resource describes one served resource in one group version.
type Resource struct {
	GroupVersion schema.GroupVersion
	// Resource is the plural lower-case name, e.g. "leases".
	Resource     string
	SingularName string
	Kind         string
	ListKind     string
	ShortNames   []string
	Categories   []string
	Namespaced   bool
	// StatusSubresource serves <name>/status (get, update, patch).
	StatusSubresource bool
	// AllowCreateOnUpdate lets PUT create a missing object (Leases do; Nodes do not).
	AllowCreateOnUpdate bool
	// AllowUnconditionalUpdate lets PUT omit metadata.resourceVersion
	// (nodes, events, namespaces); leases require it (422 otherwise).
	AllowUnconditionalUpdate bool
	// StorageResource names the storage key segment, usually Resource.
	StorageResource string

	New     func() runtime.Object
	NewList func() runtime.Object

	// PrepareForCreate clears or sets server-owned fields before a create.
	PrepareForCreate func(obj runtime.Object)
	// PrepareForUpdate copies server-owned fields from old (e.g. status on a
	// main-resource update, spec on a status update).
	PrepareForUpdate func(obj, old runtime.Object, subresource string)
	// ValidateName checks metadata.name and generateName in the generic
	// ObjectMeta validation; nil means a DNS-1123 subdomain, as most kinds
	// (LeaseCandidates take ConfigMap keys, e.g. "host_uuid"). Use NameValidator.
	ValidateName metavalidation.ValidateNameFunc
	// ValidateCreate and ValidateUpdate check the kind-specific parts; the
	// generic path validates ObjectMeta itself.
	ValidateCreate func(obj runtime.Object) field.ErrorList
	ValidateUpdate func(obj, old runtime.Object) field.ErrorList
	// SelectableFields returns the field set field selectors match against;
	// metadata.name and metadata.namespace are always included by the caller.
	SelectableFields func(obj runtime.Object) fields.Set

	// ChangedFields, when set, lists the non-metadata fields that differ
	// between old and obj, each set in both (ok=false when it cannot tell
	// cheaply, e.g. a field was added or removed). It lets the update path
	// keep a renewal's managedFields without running structured-merge-diff.
	ChangedFields func(old, obj runtime.Object) (paths []fieldpath.Path, ok bool)

	// Renewal, when set, names the one non-metadata field a renewal of
	// the resource moves (a Lease's spec.renewTime), so the watch cache
	// can keep an older version of a renewed object as that time alone
	// (see objects' thin.go).
	Renewal *Renewal

	// PrepareForDelete, when set, decides what a DELETE (and each object
	// of a deletecollection) does, before the generic path. It gets a
	// private copy of the current object, which it may change (a namespace
	// sets status.phase Terminating). keep=true: the object must stay for
	// now; the caller stores this copy marked for deletion exactly as it
	// marks an object held by metadata.finalizers (deletionTimestamp and
	// deletionGracePeriodSeconds 0 if unset, the propagation policy's
	// finalizers, conditional on the current resourceVersion, honouring
	// dryRun) and answers 200 with it. keep=false: the generic path goes on
	// with the current object. A non-nil error (an apimachinery StatusError)
	// is the answer. Nil means keep=false.
	PrepareForDelete func(obj runtime.Object) (keep bool, err error)
	// FinalizersDone, when set, reports whether the finalizers the kind
	// keeps outside metadata.finalizers (a namespace's spec.finalizers) are
	// all gone. An update that leaves an object with a deletionTimestamp and
	// no metadata.finalizers deletes it only if FinalizersDone(new object)
	// is true too, as kube-apiserver's ShouldDeleteNamespaceDuringUpdate.
	// Nil means true.
	FinalizersDone func(obj runtime.Object) bool
	// FinalizeSubresource serves <name>/finalize (update only, PUT), through
	// which a namespace's spec.finalizers are changed; PrepareForUpdate is
	// called with subresource "finalize".
	FinalizeSubresource bool

	// HandOffUpdates lets an update give the watch cache the object it
	// wrote instead of the cache decoding the stored value again (see
	// apiserver.Config.Intern). Set it only for types whose every slice and
	// map field is omitempty: an object decoded from a request may hold an
	// empty slice where one decoded from storage holds nil, and only then do
	// the two encode alike.
	HandOffUpdates bool

	// Review, when set, makes the resource a create-only review that is
	// answered and never stored (SubjectAccessReview, SelfSubjectReview, ...):
	// a POST decodes the body, and the answer is Review's object with 201
	// Created. rec is the request's record (the caller and what it asked).
	Review func(ctx context.Context, rec *request.Record, obj runtime.Object) (runtime.Object, error)

	// TableColumns and TableRow render the server-side printer (kubectl get).
	TableColumns []metav1.TableColumnDefinition
	TableRow     func(obj runtime.Object) []interface{}
}

// NameValidator is the function ObjectMeta validation checks names with.
func (r *Resource) NameValidator() metavalidation.ValidateNameFunc {
	if r.ValidateName != nil {
		return r.ValidateName
	}
	return metavalidation.NameIsDNSSubdomain
}

// GroupVersionResource is the resource's GVR.
func (r *Resource) GroupVersionResource() schema.GroupVersionResource {
	return r.GroupVersion.WithResource(r.Resource)
}

// GroupVersionKind is the resource's GVK.
func (r *Resource) GroupVersionKind() schema.GroupVersionKind {
	return r.GroupVersion.WithKind(r.Kind)
}

// GroupResource is the group-qualified resource used in Status messages.
func (r *Resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.GroupVersion.Group, Resource: r.Resource}
}

// KeyPrefix is the storage prefix of every object of the resource, or of one
// namespace's objects when namespace is non-empty.
func (r *Resource) KeyPrefix(namespace string) string {
	if r.Namespaced && namespace != "" {
		return "/registry/" + r.StorageResource + "/" + namespace + "/"
	}
	return "/registry/" + r.StorageResource + "/"
}

// Key is the storage key of one object.
func (r *Resource) Key(namespace, name string) string {
	if r.Namespaced {
		return "/registry/" + r.StorageResource + "/" + namespace + "/" + name
	}
	return "/registry/" + r.StorageResource + "/" + name
}

// IsKey tells whether key is Key(namespace, name), without building it:
// callers that hold a key from before can tell it is still the right one
// for the price of a comparison.
func (r *Resource) IsKey(key, namespace, name string) bool {
	rest, ok := strings.CutPrefix(key, "/registry/")
	if !ok {
		return false
	}
	if rest, ok = strings.CutPrefix(rest, r.StorageResource); !ok || !strings.HasPrefix(rest, "/") {
		return false
	}
	rest = rest[1:]
	if r.Namespaced {
		if rest, ok = strings.CutPrefix(rest, namespace); !ok || !strings.HasPrefix(rest, "/") {
			return false
		}
		rest = rest[1:]
	}
	return rest == name
}

// NamespaceAndNameFromKey splits a storage key of this resource back into its parts.
func (r *Resource) NamespaceAndNameFromKey(key string) (namespace, name string, err error) {
	rest, ok := strings.CutPrefix(key, r.KeyPrefix(""))
	if !ok {
		return "", "", fmt.Errorf("key %q is not under %q", key, r.KeyPrefix(""))
	}
	if !r.Namespaced {
		return "", rest, nil
	}
	ns, name, ok := strings.Cut(rest, "/")
	if !ok {
		return "", "", fmt.Errorf("key %q has no namespace segment", key)
	}
	return ns, name, nil
}

// Set is the collection of served resources: the list the request path,
// storage decoding, the watch cache, discovery and OpenAPI are all built
// from. A resource type is served by adding it to the Set `serve` builds
// (internal/served), which also registers its group version's types.
type Set struct {
	list []*Resource
	// byGVR indexes list for Lookup, which every request calls.
	byGVR map[schema.GroupVersionResource]*Resource
}

// NewSet builds a Set; defaults StorageResource. The first of two
// resources with the same group, version and name wins.
func NewSet(resources ...*Resource) *Set {
	s := &Set{list: resources, byGVR: make(map[schema.GroupVersionResource]*Resource, len(resources))}
	for _, r := range resources {
		if r.StorageResource == "" {
			r.StorageResource = r.Resource
		}
		if _, dup := s.byGVR[r.GroupVersionResource()]; !dup {
			s.byGVR[r.GroupVersionResource()] = r
		}
	}
	return s
}

// All returns the resources in registration order.
func (s *Set) All() []*Resource { return s.list }

// Lookup finds a resource by group, version and plural name.
func (s *Set) Lookup(group, version, resource string) (*Resource, bool) {
	r, ok := s.byGVR[schema.GroupVersionResource{Group: group, Version: version, Resource: resource}]
	return r, ok
}

// GroupVersions returns the served group versions in registration order,
// without duplicates.
func (s *Set) GroupVersions() []schema.GroupVersion {
	var out []schema.GroupVersion
	seen := map[schema.GroupVersion]bool{}
	for _, r := range s.list {
		if !seen[r.GroupVersion] {
			seen[r.GroupVersion] = true
			out = append(out, r.GroupVersion)
		}
	}
	return out
}
