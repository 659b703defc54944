package authorization

import (
	"context"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/request"
)

// rulesReviewer answers SelfSubjectRulesReview (kubectl auth can-i --list).
type rulesReviewer struct {
	resolver authz.RuleResolver
}

func (r rulesReviewer) review(ctx context.Context, rec *request.Record, obj runtime.Object) (runtime.Object, error) {
	srr, ok := obj.(*authorizationv1.SelfSubjectRulesReview)
	if !ok {
		return nil, notA("SelfSubjectRulesReview", obj)
	}
	if srr.Spec.Namespace == "" {
		return nil, apierrors.NewBadRequest("no namespace on request")
	}
	status := r.resolver.RulesFor(ctx, rec.User, srr.Spec.Namespace)
	// Both lists are required fields: an empty answer is [], not null.
	if status.ResourceRules == nil {
		status.ResourceRules = []authorizationv1.ResourceRule{}
	}
	if status.NonResourceRules == nil {
		status.NonResourceRules = []authorizationv1.NonResourceRule{}
	}
	// As upstream, the answer carries the status only.
	return &authorizationv1.SelfSubjectRulesReview{Status: status}, nil
}
