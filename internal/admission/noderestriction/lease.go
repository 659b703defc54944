package noderestriction

import (
	"errors"

	corev1 "k8s.io/api/core/v1"

	"github.com/leasehold/leasehold/internal/admission"
	"github.com/leasehold/leasehold/internal/authz/node"
)

// admitLease confines a node to its own lease in kube-node-lease. On create
// the name comes from the body, which the Node authorizer could not check.
func admitLease(nodeName string, a *admission.Attributes) error {
	if a.Namespace != corev1.NamespaceNodeLease {
		return forbidden(a, errors.New(node.ReasonLeaseNamespace))
	}
	if objectName(a) != nodeName {
		return forbidden(a, errors.New(node.ReasonLeaseName))
	}
	return nil
}
