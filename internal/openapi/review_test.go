package openapi

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/registry/authorization"
	"github.com/leasehold/leasehold/internal/registry/rbac"
)

// TestReviewAndRBACDocuments builds the documents for the RBAC kinds and the
// review resources: a review publishes only its create operation, with its
// kind's schema, and the RBAC kinds are complete (kubectl explain and apply
// read them).
func TestReviewAndRBACDocuments(t *testing.T) {
	set := registry.NewSet(append(append(testSet().All(), rbac.Resources(time.Now)...), authorization.Resources(nil, nil)...)...)
	o, err := New(set, "v1.33.0")
	if err != nil {
		t.Fatal(err)
	}
	paths := o.V2().Paths.Paths
	ssar, ok := paths["/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"]
	if !ok || ssar.Post == nil || ssar.Get != nil || ssar.Put != nil || ssar.Delete != nil {
		t.Fatalf("selfsubjectaccessreviews path %+v", ssar)
	}
	if id := ssar.Post.ID; id != "createAuthorizationV1SelfSubjectAccessReview" {
		t.Errorf("operation id %q", id)
	}
	if _, ok := paths["/apis/authorization.k8s.io/v1/namespaces/{namespace}/localsubjectaccessreviews"]; !ok {
		t.Error("no namespaced localsubjectaccessreviews path")
	}
	if _, ok := paths["/apis/authentication.k8s.io/v1beta1/selfsubjectreviews"]; !ok {
		t.Error("no v1beta1 selfsubjectreviews path")
	}
	role, ok := o.V2().Definitions["io.k8s.api.rbac.v1.Role"]
	if !ok || role.Extensions[extensionGVK] == nil {
		t.Fatalf("Role definition %+v", role)
	}
	if _, ok := paths["/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings/{name}"]; !ok {
		t.Error("no rolebinding item path")
	}
	if _, ok := o.V3("apis/authorization.k8s.io/v1"); !ok {
		t.Error("no v3 document for authorization.k8s.io/v1")
	}
}
