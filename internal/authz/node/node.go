// Package node is the Node authorizer (--authorization-mode Node): it lets a
// node agent, authenticated as system:node:<name> in group system:nodes, do
// what a kubelet needs against its own objects and nothing more, as
// kube-apiserver's Node authorizer does. Everyone else gets NoOpinion, so the
// next mode (RBAC) decides for them.
//
// What a node is granted here, and why:
//   - Leases in coordination.k8s.io: get, create, update, patch and delete,
//     only in kube-node-lease and only the lease named after the node (its
//     heartbeat). A create carries no name the authorizer can see, so it is
//     allowed here and the name is checked by NodeRestriction admission. A
//     node may never list or watch leases.
//   - Nodes: create, update and patch (NodeRestriction limits them to the
//     node's own Node and to the fields a kubelet may touch); get, list and
//     watch only of its own Node, by name or, for list and watch, by the
//     field selector metadata.name=<name> (Kubernetes' AuthorizeNodeWithSelectors,
//     GA since 1.34); update and patch of nodes/status. Nothing else: not
//     delete (a node cannot delete itself), not a read of nodes/status.
//   - A fixed rule list for resources that are not tied to one node: create,
//     update and patch of core events (kubelets report through them), and
//     create of tokenreviews, subjectaccessreviews and
//     localsubjectaccessreviews (non-mutating checks), taken from Kubernetes'
//     system:node rules.
//
// What it does not grant: Kubernetes authorizes a kubelet's pods, secrets,
// configmaps, volumes and service account tokens through a graph of which
// objects are bound to which node. Leasehold runs no workloads and builds no
// such graph, so a node's request for those resources (Leasehold serves pods
// as plain records) gets NoOpinion and is left to RBAC. Kubernetes' rules for
// services, endpoints, CSRs and CSI objects are left out because Leasehold
// does not serve those resources.
//
// Invariants: the authorizer holds no state and reads nothing but the
// request's attributes; every refusal is NoOpinion with Kubernetes' reason
// text (never Deny), so an admin can still grant more through RBAC, exactly
// as in Kubernetes; the hot path (a lease renewal) does not allocate.
package node

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/request"
)

// Authorizer is the Node authorizer. The zero value is ready to use.
type Authorizer struct{}

var (
	_ authz.Authorizer   = Authorizer{}
	_ authz.RuleResolver = Authorizer{}
)

// Authorize implements authz.Authorizer.
func (Authorizer) Authorize(_ context.Context, a *request.Attributes) (authz.Decision, string, error) {
	nodeName, isNode := Identity(&a.User)
	if !isNode {
		return authz.DecisionNoOpinion, "", nil
	}
	if nodeName == "" {
		return authz.DecisionNoOpinion, fmt.Sprintf("unknown node for user %q", a.User.Name), nil
	}
	if a.ResourceRequest {
		switch {
		case a.APIGroup == coordinationv1.GroupName && a.Resource == "leases":
			return authorizeLease(nodeName, a)
		case a.APIGroup == corev1.GroupName && a.Resource == "nodes":
			return authorizeNode(nodeName, a)
		}
	}
	if staticRulesAllow(a) {
		return authz.DecisionAllow, "", nil
	}
	return authz.DecisionNoOpinion, "", nil
}

// RulesFor implements authz.RuleResolver. As in Kubernetes, a node's rules
// depend on the object asked about and cannot be listed: the answer is
// incomplete, with an evaluation error; other users get nothing from this
// authorizer.
func (Authorizer) RulesFor(_ context.Context, u request.User, _ string) authorizationv1.SubjectRulesReviewStatus {
	if _, isNode := Identity(&u); isNode {
		return authorizationv1.SubjectRulesReviewStatus{
			Incomplete:      true,
			EvaluationError: "node authorizer does not support user rule resolution",
		}
	}
	return authorizationv1.SubjectRulesReviewStatus{}
}
