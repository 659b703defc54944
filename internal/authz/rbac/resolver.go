package rbac

import (
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/leasehold/leasehold/internal/request"
)

// NotFoundStyle chooses how a binding to a missing role is reported.
// Kubernetes' authorizer reads roles through client-go listers, whose error
// names the singular resource (`clusterrole.rbac.authorization.k8s.io "x"
// not found`); its escalation check reads them through the registry, whose
// error names the plural one (`clusterroles.rbac.authorization.k8s.io "x"
// not found`). Each caller keeps its upstream wording.
type NotFoundStyle int

const (
	// ListerNotFound is the authorizer's wording (singular resource).
	ListerNotFound NotFoundStyle = iota
	// StorageNotFound is the escalation check's wording (plural resource).
	StorageNotFound
)

// Resolver finds the rules that apply to a user in a namespace, as
// Kubernetes' DefaultRuleResolver: every rule of every ClusterRoleBinding
// naming the user, then of every RoleBinding of the namespace naming it.
type Resolver struct {
	src   Source
	style NotFoundStyle
}

// NewResolver returns a resolver over src's current Policy.
func NewResolver(src Source, style NotFoundStyle) *Resolver {
	return &Resolver{src: src, style: style}
}

// visitor sees each rule that applies (b and subject say where it comes
// from), or an error resolving a binding's role (rule nil). Returning false
// stops the walk.
type visitor func(b *binding, subject int, rule *rbacv1.PolicyRule, err error) bool

// visit walks the rules of u in namespace over one snapshot, ClusterRoleBindings
// first. It reports whether the walk ran to the end.
func (r *Resolver) visit(p *Policy, u *request.User, namespace string, fn visitor) bool {
	if !r.visitIndex(&p.cluster, u, fn) {
		return false
	}
	if namespace == "" {
		return true
	}
	if x, ok := p.namespaces[namespace]; ok {
		return r.visitIndex(x, u, fn)
	}
	return true
}

func (r *Resolver) visitIndex(x *bindingIndex, u *request.User, fn visitor) bool {
	return x.candidates(u, func(pos int32) bool {
		b := &x.entries[pos]
		subject, ok := appliesTo(u, b)
		if !ok {
			return true
		}
		if !b.found {
			return fn(b, subject, nil, r.roleRefError(b.roleRef))
		}
		for i := range b.rules {
			if !fn(b, subject, &b.rules[i], nil) {
				return false
			}
		}
		return true
	})
}

// RulesFor returns every rule that applies to u in namespace, and the
// errors met resolving roles (the rules returned still apply: RBAC only
// adds permissions).
func (r *Resolver) RulesFor(u request.User, namespace string) ([]rbacv1.PolicyRule, error) {
	var (
		rules []rbacv1.PolicyRule
		errs  []error
	)
	r.visit(r.src.Policy(), &u, namespace, func(_ *binding, _ int, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil {
			rules = append(rules, *rule)
		}
		if err != nil {
			errs = append(errs, err)
		}
		return true
	})
	return rules, utilerrors.NewAggregate(errs)
}

// RoleRefRules returns the rules of the role ref refers to, for a binding
// in bindingNamespace ("" for a ClusterRoleBinding).
func (r *Resolver) RoleRefRules(ref rbacv1.RoleRef, bindingNamespace string) ([]rbacv1.PolicyRule, error) {
	p := r.src.Policy()
	switch ref.Kind {
	case "ClusterRole":
		if role, ok := p.ClusterRole(ref.Name); ok {
			return role.Rules, nil
		}
	case "Role":
		if role, ok := p.Role(bindingNamespace, ref.Name); ok {
			return role.Rules, nil
		}
	}
	return nil, r.roleRefError(ref)
}

// roleRefError is why ref resolves to nothing.
func (r *Resolver) roleRefError(ref rbacv1.RoleRef) error {
	var resource string
	switch ref.Kind {
	case "ClusterRole":
		resource = "clusterrole"
	case "Role":
		resource = "role"
	default:
		return fmt.Errorf("unsupported role reference kind: %q", ref.Kind)
	}
	if r.style == StorageNotFound {
		resource += "s"
	}
	return apierrors.NewNotFound(rbacv1.Resource(resource), ref.Name)
}

// appliesTo returns the first subject of b that names u, as Kubernetes'
// appliesTo: a User by name, a Group by membership, a ServiceAccount by its
// user name system:serviceaccount:<namespace>:<name> (namespace defaulting
// to the binding's). The subjects' apiGroup is not looked at (validation
// checks it when the binding is written).
func appliesTo(u *request.User, b *binding) (int, bool) {
	for i := range b.subjects {
		s := &b.subjects[i]
		switch s.Kind {
		case rbacv1.UserKind:
			if u.Name == s.Name {
				return i, true
			}
		case rbacv1.GroupKind:
			if u.InGroup(s.Name) {
				return i, true
			}
		case rbacv1.ServiceAccountKind:
			if isServiceAccount(u.Name, s, b.namespace) {
				return i, true
			}
		}
	}
	return 0, false
}

// isServiceAccount reports whether user is the user name of subject s
// without building that name.
func isServiceAccount(user string, s *rbacv1.Subject, bindingNamespace string) bool {
	ns := s.Namespace
	if ns == "" {
		ns = bindingNamespace
	}
	if ns == "" {
		return false
	}
	p := request.ServiceAccountPrefix
	return len(user) == len(p)+len(ns)+1+len(s.Name) &&
		user[:len(p)] == p &&
		user[len(p):len(p)+len(ns)] == ns &&
		user[len(p)+len(ns)] == ':' &&
		user[len(p)+len(ns)+1:] == s.Name
}

// maxStackLists is how many index lists (the user's and one per group)
// candidates merges without allocating.
const maxStackLists = 8

// candidates calls fn with the position of each binding that has a subject
// naming u's user name or one of its groups, ascending and once each, until
// fn returns false; it reports whether it ran to the end. The caller still
// checks each candidate with appliesTo, which also picks the subject the
// reason names.
func (x *bindingIndex) candidates(u *request.User, fn func(pos int32) bool) bool {
	var stack [maxStackLists][]int32
	lists := stack[:0]
	if l := x.byUser[u.Name]; len(l) > 0 {
		lists = append(lists, l)
	}
	for _, g := range u.Groups {
		if l := x.byGroup[g]; len(l) > 0 {
			lists = append(lists, l)
		}
	}
	for {
		next := int32(-1)
		for _, l := range lists {
			if len(l) > 0 && (next < 0 || l[0] < next) {
				next = l[0]
			}
		}
		if next < 0 {
			return true
		}
		for i, l := range lists {
			if len(l) > 0 && l[0] == next {
				lists[i] = l[1:]
			}
		}
		if !fn(next) {
			return false
		}
	}
}
