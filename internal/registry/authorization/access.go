package authorization

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/request"
)

// accessReviewer answers the three access reviews with one authorizer.
type accessReviewer struct {
	authorizer authz.Authorizer
}

// self answers a SelfSubjectAccessReview for the caller.
func (r accessReviewer) self(ctx context.Context, rec *request.Record, obj runtime.Object) (runtime.Object, error) {
	sar, ok := obj.(*authorizationv1.SelfSubjectAccessReview)
	if !ok {
		return nil, notA("SelfSubjectAccessReview", obj)
	}
	errs := ValidateSelfSubjectAccessReviewSpec(&sar.Spec, field.NewPath("spec"))
	if errs = append(errs, validateEmptyMeta(sar.ObjectMeta, false)...); len(errs) > 0 {
		return nil, invalid(authorizationv1.GroupName, errs)
	}
	var a attributes
	if sar.Spec.ResourceAttributes != nil {
		a = resourceAttributes(rec.User, sar.Spec.ResourceAttributes)
	} else {
		a = nonResourceAttributes(rec.User, sar.Spec.NonResourceAttributes)
	}
	sar.Status = r.decide(ctx, a)
	return sar, nil
}

// subject answers a SubjectAccessReview for the subject its spec names.
func (r accessReviewer) subject(ctx context.Context, _ *request.Record, obj runtime.Object) (runtime.Object, error) {
	sar, ok := obj.(*authorizationv1.SubjectAccessReview)
	if !ok {
		return nil, notA("SubjectAccessReview", obj)
	}
	errs := ValidateSubjectAccessReviewSpec(&sar.Spec, field.NewPath("spec"))
	if errs = append(errs, validateEmptyMeta(sar.ObjectMeta, false)...); len(errs) > 0 {
		return nil, invalid(authorizationv1.GroupName, errs)
	}
	sar.Status = r.decide(ctx, specAttributes(&sar.Spec))
	return sar, nil
}

// local answers a LocalSubjectAccessReview, which may only ask about the
// namespace it is posted to.
func (r accessReviewer) local(ctx context.Context, rec *request.Record, obj runtime.Object) (runtime.Object, error) {
	sar, ok := obj.(*authorizationv1.LocalSubjectAccessReview)
	if !ok {
		return nil, notA("LocalSubjectAccessReview", obj)
	}
	// As kube-apiserver's create handler: the URL's namespace fills an
	// empty metadata.namespace and must equal a given one.
	switch {
	case sar.Namespace == "":
		sar.Namespace = rec.Namespace
	case sar.Namespace != rec.Namespace:
		return nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	if errs := ValidateLocalSubjectAccessReview(sar); len(errs) > 0 {
		return nil, invalid(authorizationv1.GroupName, errs)
	}
	if rec.Namespace == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("namespace is required on this type: %v", rec.Namespace))
	}
	if rec.Namespace != sar.Namespace {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("spec.resourceAttributes.namespace must match namespace: %v", rec.Namespace))
	}
	sar.Status = r.decide(ctx, specAttributes(&sar.Spec))
	return sar, nil
}

// decide asks the authorizer and renders its answer as a review status.
func (r accessReviewer) decide(ctx context.Context, a attributes) authorizationv1.SubjectAccessReviewStatus {
	decision, reason, err := r.authorizer.Authorize(ctx, &a.Attributes)
	return authorizationv1.SubjectAccessReviewStatus{
		Allowed:         decision == authz.DecisionAllow,
		Denied:          decision == authz.DecisionDeny,
		Reason:          reason,
		EvaluationError: evaluationError(err, a),
	}
}
