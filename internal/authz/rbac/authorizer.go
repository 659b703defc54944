package rbac

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/request"
)

// Authorizer is the RBAC authorizer. Build it with NewAuthorizer.
type Authorizer struct {
	resolver *Resolver
}

var _ authz.Authorizer = (*Authorizer)(nil)

// NewAuthorizer returns the RBAC authorizer over src's current Policy.
func NewAuthorizer(src Source) *Authorizer {
	return &Authorizer{resolver: NewResolver(src, ListerNotFound)}
}

// Authorize implements authz.Authorizer: Allow with the reason naming the
// first binding whose role has a rule that matches, else NoOpinion with the
// role resolution errors met on the way ("RBAC: ..."), if any. It never
// denies and never fails.
func (z *Authorizer) Authorize(_ context.Context, a *request.Attributes) (authz.Decision, string, error) {
	var (
		reason string
		errs   []error
	)
	z.resolver.visit(z.resolver.src.Policy(), &a.User, a.Namespace, func(b *binding, subject int, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil && RuleAllows(a, rule) {
			reason = b.reasons[subject]
			return false
		}
		if err != nil {
			errs = append(errs, err)
		}
		return true
	})
	if reason != "" {
		return authz.DecisionAllow, reason, nil
	}
	if len(errs) > 0 {
		return authz.DecisionNoOpinion, "RBAC: " + utilerrors.NewAggregate(errs).Error(), nil
	}
	return authz.DecisionNoOpinion, "", nil
}
