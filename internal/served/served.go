// Package served is the one list of what `leasehold serve` exposes: per
// group version, its resource descriptors (each with its table columns),
// the function that registers its Go types in a scheme, the Go package its
// OpenAPI definitions are generated from, and its reviews. The scheme
// (NewScheme), the served set that discovery, OpenAPI and the request path
// are built from (Stored, WithReviews), the subset served behind a cluster
// (Cluster) and the OpenAPI generation (internal/openapi/generate.sh, which
// reads OpenAPIPackages) all read List; TestListAgrees checks that they
// agree.
//
// To serve a new resource, add its descriptor to its group version's entry
// below, or add an entry for a new group version, then regenerate the
// OpenAPI definitions (go generate ./internal/openapi).
package served

import (
	"fmt"
	"time"

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

	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/registry/authorization"
	"github.com/leasehold/leasehold/internal/registry/configmap"
	"github.com/leasehold/leasehold/internal/registry/event"
	"github.com/leasehold/leasehold/internal/registry/lease"
	"github.com/leasehold/leasehold/internal/registry/leasecandidate"
	"github.com/leasehold/leasehold/internal/registry/namespace"
	"github.com/leasehold/leasehold/internal/registry/node"
	"github.com/leasehold/leasehold/internal/registry/pod"
	"github.com/leasehold/leasehold/internal/registry/rbac"
)

// GroupVersion is one served group version.
type GroupVersion struct {
	schema.GroupVersion
	// AddToScheme registers the group version's Go types (k8s.io/api's
	// AddToScheme).
	AddToScheme func(*runtime.Scheme) error
	// OpenAPI is the Go package of those types, which openapi-gen reads
	// to generate their definitions (internal/openapi/generate.sh).
	OpenAPI string
	// Stored are the descriptors of the stored resources; now is the clock
	// of their tables' AGE column.
	Stored func(now func() time.Time) []*registry.Resource
	// Reviews are the create-only reviews, which store nothing and answer
	// with the server's authorization: authorizer answers the access
	// reviews, rules SelfSubjectRulesReview.
	Reviews func(authorizer authz.Authorizer, rules authz.RuleResolver) []*registry.Resource
	// Cluster: served behind a cluster too (serve
	// --authentication-kubeconfig), where the cluster keeps everything but
	// what an APIService routes to Leasehold.
	Cluster bool
}

// List is every group version serve exposes, in discovery's order.
var List = []GroupVersion{
	{
		GroupVersion: corev1.SchemeGroupVersion, AddToScheme: corev1.AddToScheme, OpenAPI: "k8s.io/api/core/v1",
		Stored: func(now func() time.Time) []*registry.Resource {
			return []*registry.Resource{namespace.Resource(now), node.Resource(now), event.Resource(now), pod.Resource(now), configmap.Resource(now)}
		},
	},
	{
		GroupVersion: coordinationv1.SchemeGroupVersion, AddToScheme: coordinationv1.AddToScheme, OpenAPI: "k8s.io/api/coordination/v1",
		Stored:  func(now func() time.Time) []*registry.Resource { return []*registry.Resource{lease.Resource(now)} },
		Cluster: true,
	},
	{
		GroupVersion: coordinationv1beta1.SchemeGroupVersion, AddToScheme: coordinationv1beta1.AddToScheme, OpenAPI: "k8s.io/api/coordination/v1beta1",
		Stored: func(now func() time.Time) []*registry.Resource {
			return []*registry.Resource{leasecandidate.Resource(now)}
		},
		Cluster: true,
	},
	{
		GroupVersion: rbacv1.SchemeGroupVersion, AddToScheme: rbacv1.AddToScheme, OpenAPI: "k8s.io/api/rbac/v1",
		Stored: rbac.Resources,
	},
	{
		GroupVersion: authorizationv1.SchemeGroupVersion, AddToScheme: authorizationv1.AddToScheme, OpenAPI: "k8s.io/api/authorization/v1",
		Reviews: reviewsIn(authorizationv1.SchemeGroupVersion),
	},
	{
		GroupVersion: authenticationv1.SchemeGroupVersion, AddToScheme: authenticationv1.AddToScheme, OpenAPI: "k8s.io/api/authentication/v1",
		Reviews: reviewsIn(authenticationv1.SchemeGroupVersion),
	},
	{
		GroupVersion: authenticationv1beta1.SchemeGroupVersion, AddToScheme: authenticationv1beta1.AddToScheme, OpenAPI: "k8s.io/api/authentication/v1beta1",
		Reviews: reviewsIn(authenticationv1beta1.SchemeGroupVersion),
	},
}

// OpenAPIAlso are the packages whose definitions the OpenAPI documents
// need besides the served types': the meta types of requests and answers,
// version.Info for /version, and the types that served ones embed.
// events.k8s.io/v1 is generated for internal/openapi's test of a kind the
// scheme does not know (TestKindOutsideScheme), and is not served.
var OpenAPIAlso = []string{
	"k8s.io/api/events/v1",
	"k8s.io/apimachinery/pkg/apis/meta/v1",
	"k8s.io/apimachinery/pkg/runtime",
	"k8s.io/apimachinery/pkg/version",
	"k8s.io/apimachinery/pkg/util/intstr",
	"k8s.io/apimachinery/pkg/api/resource",
}

// reviewsIn is the reviews of internal/registry/authorization in gv.
func reviewsIn(gv schema.GroupVersion) func(authz.Authorizer, authz.RuleResolver) []*registry.Resource {
	return func(a authz.Authorizer, r authz.RuleResolver) []*registry.Resource {
		var out []*registry.Resource
		for _, res := range authorization.Resources(a, r) {
			if res.GroupVersion == gv {
				out = append(out, res)
			}
		}
		return out
	}
}

// NewScheme returns a new scheme holding the types of every listed group
// version plus the meta.k8s.io types (Status, Table, PartialObjectMetadata,
// WatchEvent, options). Each server builds its own: there is no
// package-level scheme.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, gv := range List {
		if err := gv.AddToScheme(s); err != nil {
			return nil, fmt.Errorf("building scheme: %s: %w", gv.GroupVersion, err)
		}
	}
	if err := metav1.AddMetaToScheme(s); err != nil {
		return nil, fmt.Errorf("building scheme: %w", err)
	}
	// Unversioned meta types (Status, WatchEvent, ListOptions, ...) in every group version.
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s, nil
}

// Stored is the stored resources serve exposes on its own: those of every
// listed group version. The reviews join them in WithReviews once the
// server's authorizer exists, since they answer with it (and the
// authorizer reads RBAC objects from the watch cache of these).
func Stored(now func() time.Time) *registry.Set {
	return registry.NewSet(stored(now, func(GroupVersion) bool { return true })...)
}

// Cluster is what serve exposes behind a cluster: the stored resources of
// the group versions marked Cluster (the versions of coordination.k8s.io
// an APIService may route to it). The cluster answers the reviews.
func Cluster(now func() time.Time) *registry.Set {
	return registry.NewSet(stored(now, func(gv GroupVersion) bool { return gv.Cluster })...)
}

// WithReviews is every resource the API serves: the stored ones and the
// listed reviews, answered with authorizer and rules.
func WithReviews(stored *registry.Set, authorizer authz.Authorizer, rules authz.RuleResolver) *registry.Set {
	all := stored.All()
	for _, gv := range List {
		if gv.Reviews != nil {
			all = append(all, gv.Reviews(authorizer, rules)...)
		}
	}
	return registry.NewSet(all...)
}

func stored(now func() time.Time, keep func(GroupVersion) bool) []*registry.Resource {
	var out []*registry.Resource
	for _, gv := range List {
		if gv.Stored != nil && keep(gv) {
			out = append(out, gv.Stored(now)...)
		}
	}
	return out
}

// OpenAPIPackages is every package openapi-gen reads: the listed group
// versions' and OpenAPIAlso.
func OpenAPIPackages() []string {
	var out []string
	for _, gv := range List {
		out = append(out, gv.OpenAPI)
	}
	return append(out, OpenAPIAlso...)
}
