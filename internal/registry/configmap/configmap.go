// Package configmap describes core v1 ConfigMaps: namespaced, short name cm,
// kube-apiserver's validation (ConfigMap keys, no key in both data and
// binaryData, 1 MiB in all, immutable once `immutable` is set) and the
// columns `kubectl get configmaps` prints.
//
// Leasehold serves them because ConfigMap-based leader election (the
// Python client's ConfigMapLock, older Java and Go libraries) keeps its
// record in a ConfigMap's annotation; they are stored as given, under
// /registry/configmaps/, as kube-apiserver stores them.
//
// Invariants: the descriptor's functions are pure and only ever see
// *corev1.ConfigMap values.
package configmap

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/leasehold/leasehold/internal/registry"
)

// Resource returns the descriptor of core v1 configmaps; now is the clock
// of the AGE column.
func Resource(now func() time.Time) *registry.Resource {
	return &registry.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Resource:     "configmaps",
		SingularName: "configmap",
		Kind:         "ConfigMap",
		ListKind:     "ConfigMapList",
		ShortNames:   []string{"cm"},
		Namespaced:   true,
		// As kube-apiserver's configmap strategy: a PUT never creates, and
		// may omit resourceVersion (then it is unconditional).
		AllowUnconditionalUpdate: true,
		New:                      func() runtime.Object { return &corev1.ConfigMap{} },
		NewList:                  func() runtime.Object { return &corev1.ConfigMapList{} },
		ValidateCreate: func(obj runtime.Object) field.ErrorList {
			return Validate(obj.(*corev1.ConfigMap))
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			return ValidateUpdate(obj.(*corev1.ConfigMap), old.(*corev1.ConfigMap))
		},
		TableColumns: []metav1.TableColumnDefinition{
			registry.NameColumn,
			{Name: "Data", Type: "string", Description: corev1.ConfigMap{}.SwaggerDoc()["data"]},
			registry.AgeColumn,
		},
		TableRow: func(obj runtime.Object) []interface{} {
			c := obj.(*corev1.ConfigMap)
			return []interface{}{c.Name, int64(len(c.Data) + len(c.BinaryData)), registry.Age(c.CreationTimestamp, now())}
		},
	}
}
