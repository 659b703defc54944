package node

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/request"
)

// Reasons for refusing a node's lease request, word for word Kubernetes'
// (NodeRestriction gives the last two too). The namespace named is
// corev1.NamespaceNodeLease.
const (
	ReasonLeaseVerb      = "can only get, create, update, patch, or delete a node lease"
	ReasonLeaseNamespace = `can only access leases in the "kube-node-lease" system namespace`
	ReasonLeaseName      = "can only access node lease with the same name as the requesting node"
)

// authorizeLease allows a node its own lease in kube-node-lease. A create
// is allowed whatever its name: the name is in the body, which only
// NodeRestriction sees.
func authorizeLease(nodeName string, a *request.Attributes) (authz.Decision, string, error) {
	switch a.Verb {
	case "get", "create", "update", "patch", "delete":
	default:
		return authz.DecisionNoOpinion, ReasonLeaseVerb, nil
	}
	if a.Namespace != corev1.NamespaceNodeLease {
		return authz.DecisionNoOpinion, ReasonLeaseNamespace, nil
	}
	if a.Verb != "create" && a.Name != nodeName {
		return authz.DecisionNoOpinion, ReasonLeaseName, nil
	}
	return authz.DecisionAllow, "", nil
}
