package objects

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/leasehold/leasehold/internal/registry"
)

// ObjectMeta returns the ObjectMeta embedded in a typed object.
func ObjectMeta(obj runtime.Object) (*metav1.ObjectMeta, error) {
	a, ok := obj.(metav1.ObjectMetaAccessor)
	if !ok {
		return nil, fmt.Errorf("%T has no ObjectMeta", obj)
	}
	om, ok := a.GetObjectMeta().(*metav1.ObjectMeta)
	if !ok {
		return nil, fmt.Errorf("%T has unexpected metadata type", obj)
	}
	return om, nil
}

// kindFor returns the qualified kind used in Invalid errors.
func kindFor(res *registry.Resource) schema.GroupKind {
	return schema.GroupKind{Group: res.GroupVersion.Group, Kind: res.Kind}
}

// CheckNamespace defaults the object's namespace from the URL and
// rejects a mismatch, with kube-apiserver's message.
func CheckNamespace(res *registry.Resource, acc metav1.Object, namespace string) error {
	if !res.Namespaced {
		acc.SetNamespace("")
		return nil
	}
	switch ns := acc.GetNamespace(); {
	case ns == "":
		acc.SetNamespace(namespace)
	case ns != namespace:
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// ResourceVersionOf returns obj's resourceVersion, or "" when it has no
// metadata.
func ResourceVersionOf(obj runtime.Object) string {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return acc.GetResourceVersion()
}
