// Package rbacescalation refuses writes of RBAC roles and bindings that
// would grant permissions their writer does not hold, as Kubernetes'
// policy-based RBAC storage does (pkg/registry/rbac/*/policybased).
//
// A create or update of a Role, ClusterRole, RoleBinding or
// ClusterRoleBinding is admitted when, in this order:
//   - the caller is in system:masters;
//   - for a role, the caller may "escalate" it; for a binding, the caller
//     may "bind" the role it refers to (checked through the full
//     authorizer chain, in the binding's namespace, with the role's name);
//   - the update changes nothing but the fields the garbage collector
//     writes (ownerReferences, finalizers);
//   - or the caller already holds every rule the role grants, at the same
//     scope (cluster bindings, plus the namespace's bindings for a Role or
//     RoleBinding). A ClusterRole with an aggregationRule (before or after
//     an update) also needs `*` on everything, resources and paths.
//
// Otherwise the write is Forbidden with Kubernetes' message. The check runs
// whatever --authorization-mode says, as upstream's does in storage, so
// RBAC objects stay safe to delegate even with another authorizer.
package rbacescalation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/admission"
	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/authz/rbac"
	"github.com/leasehold/leasehold/internal/request"
)

// Plugin is the escalation check. Build it with New.
type Plugin struct {
	authorizer authz.Authorizer
	resolver   *rbac.Resolver
	log        *slog.Logger
}

var _ admission.Interface = (*Plugin)(nil)

// New returns the check. authorizer is the server's whole authorization
// chain (it answers the escalate and bind questions); src is the RBAC
// policy whose rules the caller is compared with.
func New(authorizer authz.Authorizer, src rbac.Source, log *slog.Logger) *Plugin {
	if log == nil {
		log = slog.Default()
	}
	return &Plugin{
		authorizer: authorizer,
		// Upstream's check reads roles through the registry, so a missing
		// role reads `clusterroles.rbac.authorization.k8s.io "x" not found`.
		resolver: rbac.NewResolver(src, rbac.StorageNotFound),
		log:      log.With("admission", "rbac-escalation"),
	}
}

// Admit implements admission.Interface.
func (p *Plugin) Admit(ctx context.Context, a *admission.Attributes) error {
	if a.Operation != admission.Create && a.Operation != admission.Update {
		return nil
	}
	if !a.ResourceRequest || a.APIGroup != rbacv1.GroupName || a.Subresource != "" {
		return nil
	}
	switch a.Resource {
	case "roles", "clusterroles", "rolebindings", "clusterrolebindings":
	default:
		return nil
	}
	if a.User.InGroup(request.SystemPrivilegedGroup) {
		return nil
	}
	var old runtime.Object
	if a.Operation == admission.Update {
		old = a.OldObject
	}
	switch a.Resource {
	case "roles":
		obj, ok := a.Object.(*rbacv1.Role)
		if !ok {
			return wrongType(a)
		}
		return p.admitRole(ctx, a, old, obj.Name, obj.Rules, false)
	case "clusterroles":
		obj, ok := a.Object.(*rbacv1.ClusterRole)
		if !ok {
			return wrongType(a)
		}
		oldRole, _ := old.(*rbacv1.ClusterRole)
		return p.admitRole(ctx, a, old, obj.Name, obj.Rules, aggregates(obj) || aggregates(oldRole))
	case "rolebindings":
		obj, ok := a.Object.(*rbacv1.RoleBinding)
		if !ok {
			return wrongType(a)
		}
		if a.Namespace == "" {
			return apierrors.NewBadRequest("namespace is required")
		}
		return p.admitBinding(ctx, a, old, obj.Name, obj.RoleRef)
	default:
		obj, ok := a.Object.(*rbacv1.ClusterRoleBinding)
		if !ok {
			return wrongType(a)
		}
		return p.admitBinding(ctx, a, old, obj.Name, obj.RoleRef)
	}
}

func wrongType(a *admission.Attributes) error {
	return fmt.Errorf("rbac escalation check: %T is not a %s object", a.Object, a.Resource)
}

// fullAuthority is what an aggregationRule needs: it can gather any rule.
var fullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{rbacv1.VerbAll}, APIGroups: []string{rbacv1.APIGroupAll}, Resources: []string{rbacv1.ResourceAll}},
	{Verbs: []string{rbacv1.VerbAll}, NonResourceURLs: []string{rbacv1.NonResourceAll}},
}

func aggregates(r *rbacv1.ClusterRole) bool {
	return r != nil && r.AggregationRule != nil && len(r.AggregationRule.ClusterRoleSelectors) > 0
}

// admitRole checks a Role or ClusterRole called name granting rules.
func (p *Plugin) admitRole(ctx context.Context, a *admission.Attributes, old runtime.Object, name string, rules []rbacv1.PolicyRule, aggregation bool) error {
	if p.allowed(ctx, &request.Attributes{
		User: a.User, ResourceRequest: true, Verb: "escalate",
		APIGroup: a.APIGroup, APIVersion: "*", Resource: a.Resource, Name: a.Name, Namespace: a.Namespace,
	}) {
		return nil
	}
	if old != nil && onlyGCFieldsChange(a.Object, old) {
		return nil
	}
	gr := rbacv1.Resource(a.Resource)
	if err := p.confirmNoEscalation(a.User, a.Namespace, rules); err != nil {
		return apierrors.NewForbidden(gr, name, err)
	}
	if aggregation {
		if err := p.confirmNoEscalation(a.User, a.Namespace, fullAuthority); err != nil {
			return apierrors.NewForbidden(gr, name, errors.New("must have cluster-admin privileges to use the aggregationRule"))
		}
	}
	return nil
}

// admitBinding checks a RoleBinding or ClusterRoleBinding called name
// binding ref.
func (p *Plugin) admitBinding(ctx context.Context, a *admission.Attributes, old runtime.Object, name string, ref rbacv1.RoleRef) error {
	if old != nil && onlyGCFieldsChange(a.Object, old) {
		return nil
	}
	if p.bindAllowed(ctx, a.User, ref, a.Namespace) {
		return nil
	}
	rules, err := p.resolver.RoleRefRules(ref, a.Namespace)
	if err != nil {
		return err
	}
	if err := p.confirmNoEscalation(a.User, a.Namespace, rules); err != nil {
		return apierrors.NewForbidden(rbacv1.Resource(a.Resource), name, err)
	}
	return nil
}

// bindAllowed reports whether u may bind ref's role in namespace ("" for a
// ClusterRoleBinding): verb bind on roles or clusterroles, named as the role.
func (p *Plugin) bindAllowed(ctx context.Context, u request.User, ref rbacv1.RoleRef, namespace string) bool {
	var resource string
	switch ref.Kind {
	case "ClusterRole":
		resource = "clusterroles"
	case "Role":
		resource = "roles"
	default:
		return false
	}
	return p.allowed(ctx, &request.Attributes{
		User: u, ResourceRequest: true, Verb: "bind",
		APIGroup: ref.APIGroup, Resource: resource, Name: ref.Name, Namespace: namespace,
	})
}

// allowed asks the authorizer chain; an error counts as no.
func (p *Plugin) allowed(ctx context.Context, a *request.Attributes) bool {
	if a.User.Name == "" {
		return false
	}
	d, _, err := p.authorizer.Authorize(ctx, a)
	if err != nil {
		p.log.Error("authorizing an RBAC escalation check", "user", a.User.Name, "verb", a.Verb, "resource", a.Resource, "name", a.Name, "namespace", a.Namespace, "err", err)
		return false
	}
	return d == authz.DecisionAllow
}
