package authz

import (
	"context"
	"slices"

	"github.com/leasehold/leasehold/internal/request"
)

// PrivilegedGroups allows every request of a member of any of its groups and
// has no opinion on anyone else. kube-apiserver puts one for system:masters
// ahead of the configured modes, so a superuser (and the server's own
// loopback identity) is never locked out by a broken RBAC policy.
type PrivilegedGroups []string

// Authorize implements Authorizer.
func (p PrivilegedGroups) Authorize(_ context.Context, a *request.Attributes) (Decision, string, error) {
	for _, g := range a.User.Groups {
		if slices.Contains(p, g) {
			return DecisionAllow, "", nil
		}
	}
	return DecisionNoOpinion, "", nil
}
