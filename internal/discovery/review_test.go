package discovery

import (
	"context"
	"slices"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/registry"
	reqrecord "github.com/leasehold/leasehold/internal/request"
)

// TestReviewVerbs: a review resource is discovered with the create verb
// only and no storage version hash, in both discovery forms.
func TestReviewVerbs(t *testing.T) {
	set := registry.NewSet(&registry.Resource{
		GroupVersion: authorizationv1.SchemeGroupVersion, Resource: "selfsubjectaccessreviews",
		SingularName: "selfsubjectaccessreview", Kind: "SelfSubjectAccessReview",
		New: func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} },
		Review: func(context.Context, *reqrecord.Record, runtime.Object) (runtime.Object, error) {
			return nil, nil
		},
	})
	list := apiResourceList(set, authorizationv1.SchemeGroupVersion)
	if len(list.APIResources) != 1 {
		t.Fatalf("resources %+v", list.APIResources)
	}
	r := list.APIResources[0]
	if !slices.Equal(r.Verbs, []string{"create"}) || r.StorageVersionHash != "" {
		t.Errorf("legacy discovery %+v", r)
	}
	agg := aggregatedResources(set, authorizationv1.SchemeGroupVersion)
	if len(agg) != 1 || !slices.Equal(agg[0].Verbs, []string{"create"}) {
		t.Errorf("aggregated discovery %+v", agg)
	}
}
