// Package authorization describes the review resources: the create-only
// kinds that answer a question instead of storing an object
// (registry.Resource.Review). authorization.k8s.io/v1 has
// SelfSubjectAccessReview and SelfSubjectRulesReview (kubectl auth can-i
// [--list]), SubjectAccessReview and the namespaced
// LocalSubjectAccessReview (may another subject do this?);
// authentication.k8s.io v1 and v1beta1 have SelfSubjectReview (kubectl auth
// whoami; kubectl 1.27 asks v1beta1).
//
// Invariants: reviews never write anything and never change the caller's
// record; the self reviews judge the authenticated caller from the request
// record, never a user named in the body; validation and error texts are
// kube-apiserver's (pkg/apis/authorization/validation and
// pkg/registry/authorization), including its Invalid errors that name no
// kind (`.authorization.k8s.io "" is invalid: ...`), because upstream
// validates the internal object, whose kind is empty.
package authorization

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	authenticationv1beta1 "k8s.io/api/authentication/v1beta1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/request"
)

// Resources returns the review resources. authorizer answers the access
// reviews (it should be the server's whole authorization chain, so that a
// review says what a request would get); resolver answers
// SelfSubjectRulesReview.
func Resources(authorizer authz.Authorizer, resolver authz.RuleResolver) []*registry.Resource {
	a := accessReviewer{authorizer: authorizer}
	return []*registry.Resource{
		review(authorizationv1.SchemeGroupVersion, "localsubjectaccessreviews", "LocalSubjectAccessReview", true,
			func() runtime.Object { return &authorizationv1.LocalSubjectAccessReview{} }, a.local),
		review(authorizationv1.SchemeGroupVersion, "selfsubjectaccessreviews", "SelfSubjectAccessReview", false,
			func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} }, a.self),
		review(authorizationv1.SchemeGroupVersion, "selfsubjectrulesreviews", "SelfSubjectRulesReview", false,
			func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} }, rulesReviewer{resolver}.review),
		review(authorizationv1.SchemeGroupVersion, "subjectaccessreviews", "SubjectAccessReview", false,
			func() runtime.Object { return &authorizationv1.SubjectAccessReview{} }, a.subject),
		review(authenticationv1.SchemeGroupVersion, "selfsubjectreviews", "SelfSubjectReview", false,
			func() runtime.Object { return &authenticationv1.SelfSubjectReview{} }, selfSubjectReviewV1),
		review(authenticationv1beta1.SchemeGroupVersion, "selfsubjectreviews", "SelfSubjectReview", false,
			func() runtime.Object { return &authenticationv1beta1.SelfSubjectReview{} }, selfSubjectReviewV1beta1),
	}
}

// reviewFunc answers one review for the caller in rec.
type reviewFunc func(ctx context.Context, rec *request.Record, obj runtime.Object) (runtime.Object, error)

func review(gv schema.GroupVersion, resource, kind string, namespaced bool, newObj func() runtime.Object, answer reviewFunc) *registry.Resource {
	return &registry.Resource{
		GroupVersion: gv,
		Resource:     resource,
		SingularName: singular(kind),
		Kind:         kind,
		Namespaced:   namespaced,
		New:          newObj,
		Review: func(ctx context.Context, rec *request.Record, obj runtime.Object) (runtime.Object, error) {
			if rec == nil {
				return nil, apierrors.NewBadRequest("no user present on request")
			}
			return answer(ctx, rec, obj)
		},
	}
}

// singular is kube-apiserver's singular name: the lower-case kind.
func singular(kind string) string {
	b := []byte(kind)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// invalid is kube-apiserver's error for a review that fails validation: it
// validates the internal object, whose kind is empty, hence the message
// `.authorization.k8s.io "" is invalid: ...`.
func invalid(group string, errs field.ErrorList) error {
	return apierrors.NewInvalid(schema.GroupKind{Group: group}, "", errs)
}

func notA(kind string, obj runtime.Object) error {
	return apierrors.NewBadRequest(fmt.Sprintf("not a %s: %#v", kind, obj))
}
