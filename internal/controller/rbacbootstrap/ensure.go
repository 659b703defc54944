// Package rbacbootstrap creates and reconciles the bootstrap RBAC policy
// (package bootstrappolicy) when the server starts, as kube-apiserver's
// rbac/bootstrap-roles post-start hook does.
//
// Reconciliation is additive and is upstream's own
// (k8s.io/component-helpers/auth/rbac/reconciliation): a missing object is
// created; an existing one annotated rbac.authorization.kubernetes.io/
// autoupdate=true gets the policy's missing rules, aggregation selectors,
// subjects, labels and annotations added; nothing an administrator added is
// ever removed; an object with autoupdate other than "true" is left alone.
//
// Invariants: Ensure writes only through the client it is given (so its
// writes take the validated request path), retries on write conflicts
// (the ClusterRole aggregation controller writes the same objects), and is
// idempotent: a second run writes nothing.
package rbacbootstrap

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-helpers/auth/rbac/reconciliation"

	"github.com/leasehold/leasehold/internal/bootstrappolicy"
)

// Ensure reconciles the whole bootstrap policy through client, which must
// be allowed to write RBAC objects (the server's loopback client). It tries
// every object and reports every failure. The reconciliation helpers take
// no context, so ctx is checked between objects.
func Ensure(ctx context.Context, client kubernetes.Interface) error {
	rbac, namespaces := client.RbacV1(), client.CoreV1().Namespaces()
	var steps []step
	for _, r := range bootstrappolicy.ClusterRoles() {
		steps = append(steps, roleStep("ClusterRole", r.Name, reconciliation.ReconcileRoleOptions{
			Role:    reconciliation.ClusterRoleRuleOwner{ClusterRole: &r},
			Client:  reconciliation.ClusterRoleModifier{Client: rbac.ClusterRoles()},
			Confirm: true,
		}))
	}
	for _, b := range bootstrappolicy.ClusterRoleBindings() {
		steps = append(steps, bindingStep("ClusterRoleBinding", b.Name, reconciliation.ReconcileRoleBindingOptions{
			RoleBinding: reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: &b},
			Client:      reconciliation.ClusterRoleBindingClientAdapter{Client: rbac.ClusterRoleBindings()},
			Confirm:     true,
		}))
	}
	for _, r := range bootstrappolicy.NamespaceRoles() {
		steps = append(steps, roleStep("Role", r.Namespace+"/"+r.Name, reconciliation.ReconcileRoleOptions{
			Role:    reconciliation.RoleRuleOwner{Role: &r},
			Client:  reconciliation.RoleModifier{Client: rbac, NamespaceClient: namespaces},
			Confirm: true,
		}))
	}
	for _, b := range bootstrappolicy.NamespaceRoleBindings() {
		steps = append(steps, bindingStep("RoleBinding", b.Namespace+"/"+b.Name, reconciliation.ReconcileRoleBindingOptions{
			RoleBinding: reconciliation.RoleBindingAdapter{RoleBinding: &b},
			Client:      reconciliation.RoleBindingClientAdapter{Client: rbac, NamespaceClient: namespaces},
			Confirm:     true,
		}))
	}
	var errs []error
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return errors.Join(append(errs, err)...)
		}
		// A conflict means someone (the aggregation controller) wrote the
		// object between our read and our write: read again and redo.
		if err := retry.RetryOnConflict(retry.DefaultBackoff, s.run); err != nil {
			errs = append(errs, fmt.Errorf("reconciling %s %s: %w", s.kind, s.name, err))
		}
	}
	return errors.Join(errs...)
}

// step reconciles one object.
type step struct {
	kind, name string
	run        func() error
}

func roleStep(kind, name string, o reconciliation.ReconcileRoleOptions) step {
	return step{kind, name, func() error { _, err := o.Run(); return err }}
}

func bindingStep(kind, name string, o reconciliation.ReconcileRoleBindingOptions) step {
	return step{kind, name, func() error { _, err := o.Run(); return err }}
}
