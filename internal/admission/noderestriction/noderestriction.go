// Package noderestriction is the NodeRestriction admission check: with the
// object in hand, it confines a node's writes to its own Node and Lease, as
// kube-apiserver's plugin of that name does. The Node authorizer cannot do
// this alone: it does not see the name of an object being created, nor what
// an update changes.
//
// A node (see node.Identity) may write:
//   - leases in kube-node-lease named after itself (create, update, delete);
//   - its own Node (create, update, delete), but not set a configSource, not
//     change its taints, and not add, change or remove labels under
//     node-restriction.kubernetes.io/ or any other kubernetes.io or k8s.io
//     label outside the set kubelets may set (k8s.io/kubelet's
//     IsKubeletLabel).
//
// Writes to any other resource are left alone, as in Kubernetes (events are
// not restricted there either). Kubernetes' pod, PVC, token and CSINode
// checks are not implemented: the Node authorizer grants nodes none of
// those resources here. Every refusal is a Forbidden error whose message is
// Kubernetes' word for word.
//
// Invariants: the plugin holds no state and never changes the objects it
// judges; users that are not nodes pass untouched.
package noderestriction

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/leasehold/leasehold/internal/admission"
	"github.com/leasehold/leasehold/internal/authz/node"
)

// Plugin is the NodeRestriction check. The zero value is ready to use.
type Plugin struct{}

var _ admission.Interface = Plugin{}

// Admit implements admission.Interface.
func (Plugin) Admit(_ context.Context, a *admission.Attributes) error {
	nodeName, isNode := node.Identity(&a.User)
	if !isNode {
		return nil
	}
	if nodeName == "" {
		return forbidden(a, fmt.Errorf("could not determine node from user %q", a.User.Name))
	}
	switch {
	case a.APIGroup == coordinationv1.GroupName && a.Resource == "leases":
		return admitLease(nodeName, a)
	case a.APIGroup == corev1.GroupName && a.Resource == "nodes":
		return admitNode(nodeName, a)
	}
	return nil
}

// objectName is the name of the object a write is about: the one in the
// path, or on a create (whose path has none) the one in the body.
func objectName(a *admission.Attributes) string {
	if a.Name != "" || a.Operation != admission.Create || a.Object == nil {
		return a.Name
	}
	if acc, err := meta.Accessor(a.Object); err == nil {
		return acc.GetName()
	}
	return ""
}

// forbidden is Kubernetes' admission.NewForbidden: a Forbidden error naming
// the resource and the object (the body's generateName if it has no name
// yet, "Unknown" if it has neither), with err as the reason.
func forbidden(a *admission.Attributes, err error) error {
	name := objectName(a)
	if name == "" {
		name = "Unknown"
		if a.Object != nil {
			if acc, aerr := meta.Accessor(a.Object); aerr == nil && acc.GetGenerateName() != "" {
				name = acc.GetGenerateName()
			}
		}
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: a.APIGroup, Resource: a.Resource}, name, err)
}
