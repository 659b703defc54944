package apiserver

import (
	"net/url"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/registry"
)

// withTableOptions applies the includeObject query parameter (meta.k8s.io
// TableOptions) to a Table response: what each row's object holds. The
// default is the object's metadata; kubectl asks for the whole object
// (includeObject=Object) when it sorts (--sort-by), since it sorts on the
// rows' objects. An unknown value is a 400, as in kube-apiserver.
func withTableOptions(n negotiated, q url.Values) (negotiated, error) {
	if n.target != targetTable {
		return n, nil
	}
	switch p := metav1.IncludeObjectPolicy(q.Get("includeObject")); p {
	case "", metav1.IncludeMetadata:
		n.include = metav1.IncludeMetadata
	case metav1.IncludeNone, metav1.IncludeObject:
		n.include = p
	default:
		return n, badRequest("unrecognized includeObject value: %q", p)
	}
	return n, nil
}

// tableRowObject is what a Table row carries for obj under policy.
func tableRowObject(res *registry.Resource, obj runtime.Object, policy metav1.IncludeObjectPolicy) (runtime.RawExtension, error) {
	switch policy {
	case metav1.IncludeNone:
		return runtime.RawExtension{}, nil
	case metav1.IncludeObject:
		// Objects may be shared with the watch cache: copy before stamping
		// the kind, never mutate.
		if obj.GetObjectKind().GroupVersionKind() != res.GroupVersionKind() {
			obj = obj.DeepCopyObject()
			obj.GetObjectKind().SetGroupVersionKind(res.GroupVersionKind())
		}
		return runtime.RawExtension{Object: obj}, nil
	}
	p, err := toPartial(obj)
	if err != nil {
		return runtime.RawExtension{}, err
	}
	return runtime.RawExtension{Object: p}, nil
}
