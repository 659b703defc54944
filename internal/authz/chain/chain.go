package chain

import (
	"errors"
	"fmt"

	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/authz/node"
	"github.com/leasehold/leasehold/internal/request"
)

// Chain is the server's authorization: the authorizer every request goes
// through and the rule resolver that answers SelfSubjectRulesReview.
type Chain struct {
	Authorizer authz.Authorizer
	Rules      authz.RuleResolver
}

// RBAC is the RBAC mode's implementation (package internal/authz/rbac): the
// authorizer, and the rule resolver SelfSubjectRulesReview lists its rules
// with.
type RBAC struct {
	Authorizer authz.Authorizer
	Rules      authz.RuleResolver
}

// New builds the chain for modes (from ParseModes). rbac is required, both
// parts, when modes include RBAC, and ignored otherwise.
//
// The authorizer asks the system:masters group first, then each mode in
// order. The rule resolver asks the modes only: as in kube-apiserver, a
// superuser's listed rules are what the other modes give it (RBAC's
// cluster-admin binding to system:masters).
func New(modes []Mode, rbac RBAC) (Chain, error) {
	if len(modes) == 0 {
		return Chain{}, errors.New("build authorization chain: no authorization-mode")
	}
	authorizers := authz.Union{authz.PrivilegedGroups{request.SystemPrivilegedGroup}}
	var rules authz.UnionRules
	for _, m := range modes {
		switch m {
		case ModeNode:
			authorizers, rules = append(authorizers, node.Authorizer{}), append(rules, node.Authorizer{})
		case ModeRBAC:
			if rbac.Authorizer == nil || rbac.Rules == nil {
				return Chain{}, errors.New("build authorization chain: authorization-mode RBAC needs the RBAC authorizer and rule resolver")
			}
			authorizers, rules = append(authorizers, rbac.Authorizer), append(rules, rbac.Rules)
		case ModeAlwaysAllow:
			authorizers, rules = append(authorizers, authz.AlwaysAllow{}), append(rules, authz.AlwaysAllow{})
		case ModeAlwaysDeny:
			authorizers, rules = append(authorizers, authz.AlwaysDeny{}), append(rules, authz.AlwaysDeny{})
		default:
			return Chain{}, fmt.Errorf("build authorization chain: authorization-mode %q is not a valid mode", m)
		}
	}
	return Chain{Authorizer: authorizers, Rules: rules}, nil
}
