package registry

import (
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	authenticationv1beta1 "k8s.io/api/authentication/v1beta1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// NewScheme returns a new scheme holding every type Leasehold serves plus the
// meta.k8s.io types (Status, Table, PartialObjectMetadata, WatchEvent, options).
// Each server builds its own: there is no package-level scheme.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme,
		coordinationv1.AddToScheme,
		coordinationv1beta1.AddToScheme,
		rbacv1.AddToScheme,
		authorizationv1.AddToScheme,
		authenticationv1.AddToScheme,
		authenticationv1beta1.AddToScheme,
		metav1.AddMetaToScheme,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building scheme: %w", err)
		}
	}
	// Unversioned meta types (Status, WatchEvent, ListOptions, ...) in every group version.
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s, nil
}
