package node_test

import (
	"context"
	"testing"

	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/authz/node"
	"github.com/leasehold/leasehold/internal/request"
)

func nodeUser(name string) request.User {
	return request.User{Name: "system:node:" + name, Groups: []string{"system:nodes", "system:authenticated"}}
}

func leaseReq(u request.User, verb, ns, name string) *request.Attributes {
	return &request.Attributes{User: u, ResourceRequest: true, Verb: verb, APIGroup: "coordination.k8s.io",
		APIVersion: "v1", Namespace: ns, Resource: "leases", Name: name}
}

func nodeReq(u request.User, verb, sub, name, fieldSelector string) *request.Attributes {
	return &request.Attributes{User: u, ResourceRequest: true, Verb: verb, APIVersion: "v1",
		Resource: "nodes", Subresource: sub, Name: name, FieldSelector: fieldSelector}
}

func TestAuthorize(t *testing.T) {
	node1 := nodeUser("node1")
	const (
		allow = authz.DecisionAllow
		none  = authz.DecisionNoOpinion
	)
	cases := []struct {
		name   string
		attrs  *request.Attributes
		want   authz.Decision
		reason string
	}{
		// Who is a node.
		{"not a node: plain user", leaseReq(request.User{Name: "alice", Groups: []string{"system:authenticated"}}, "get", "kube-node-lease", "node1"), none, ""},
		{"not a node: node name without the group", leaseReq(request.User{Name: "system:node:node1"}, "get", "kube-node-lease", "node1"), none, ""},
		{"not a node: group without the node name", leaseReq(request.User{Name: "node1", Groups: []string{"system:nodes"}}, "get", "kube-node-lease", "node1"), none, ""},
		{"node with no name", leaseReq(nodeUser(""), "get", "kube-node-lease", "node1"), none, `unknown node for user "system:node:"`},

		// Leases: own lease CRUD.
		{"own lease get", leaseReq(node1, "get", "kube-node-lease", "node1"), allow, ""},
		{"own lease update", leaseReq(node1, "update", "kube-node-lease", "node1"), allow, ""},
		{"own lease patch", leaseReq(node1, "patch", "kube-node-lease", "node1"), allow, ""},
		{"own lease delete", leaseReq(node1, "delete", "kube-node-lease", "node1"), allow, ""},
		{"lease create (name checked by admission)", leaseReq(node1, "create", "kube-node-lease", ""), allow, ""},
		// Another node's lease.
		{"other lease get", leaseReq(node1, "get", "kube-node-lease", "node2"), none, node.ReasonLeaseName},
		{"other lease update", leaseReq(node1, "update", "kube-node-lease", "node2"), none, node.ReasonLeaseName},
		{"other lease patch", leaseReq(node1, "patch", "kube-node-lease", "node2"), none, node.ReasonLeaseName},
		{"other lease delete", leaseReq(node1, "delete", "kube-node-lease", "node2"), none, node.ReasonLeaseName},
		// Verbs and namespaces.
		{"lease list", leaseReq(node1, "list", "kube-node-lease", ""), none, "can only get, create, update, patch, or delete a node lease"},
		{"lease watch", leaseReq(node1, "watch", "kube-node-lease", ""), none, node.ReasonLeaseVerb},
		{"lease deletecollection", leaseReq(node1, "deletecollection", "kube-node-lease", ""), none, node.ReasonLeaseVerb},
		{"lease in another namespace", leaseReq(node1, "get", "kube-system", "node1"), none, `can only access leases in the "kube-node-lease" system namespace`},
		{"lease create in another namespace", leaseReq(node1, "create", "default", ""), none, node.ReasonLeaseNamespace},

		// Nodes: reads of its own Node only.
		{"get own node", nodeReq(node1, "get", "", "node1", ""), allow, ""},
		{"get other node", nodeReq(node1, "get", "", "node2", ""), none, "node 'node1' cannot read 'node2', only its own Node object"},
		{"list all nodes", nodeReq(node1, "list", "", "", ""), none, "node 'node1' cannot read all nodes, only its own Node object"},
		{"watch all nodes", nodeReq(node1, "watch", "", "", ""), none, "node 'node1' cannot read all nodes, only its own Node object"},
		{"list own node by selector", nodeReq(node1, "list", "", "", "metadata.name=node1"), allow, ""},
		{"watch own node by selector", nodeReq(node1, "watch", "", "", "metadata.name==node1"), allow, ""},
		{"watch own node by selector among others", nodeReq(node1, "watch", "", "", "spec.unschedulable=false,metadata.name=node1"), allow, ""},
		{"list other node by selector", nodeReq(node1, "list", "", "", "metadata.name=node2"), none, "node 'node1' cannot read 'node2', only its own Node object"},
		{"list with a negated selector", nodeReq(node1, "list", "", "", "metadata.name!=node2"), none, "node 'node1' cannot read all nodes, only its own Node object"},
		{"list with an unrelated selector", nodeReq(node1, "list", "", "", "spec.unschedulable=false"), none, "node 'node1' cannot read all nodes, only its own Node object"},
		{"list with a malformed selector", nodeReq(node1, "list", "", "", "metadata.name"), none, "node 'node1' cannot read all nodes, only its own Node object"},
		{"list with an invalid name", nodeReq(node1, "list", "", "", "metadata.name=.."), none, "node 'node1' cannot read all nodes, only its own Node object"},
		{"watch by path name", nodeReq(node1, "watch", "", "node1", ""), allow, ""},
		// Nodes: writes (confined by NodeRestriction).
		{"create node", nodeReq(node1, "create", "", "", ""), allow, ""},
		{"update own node", nodeReq(node1, "update", "", "node1", ""), allow, ""},
		{"patch own node", nodeReq(node1, "patch", "", "node1", ""), allow, ""},
		{"update other node (refused by admission)", nodeReq(node1, "update", "", "node2", ""), allow, ""},
		{"delete own node", nodeReq(node1, "delete", "", "node1", ""), none, ""},
		{"delete other node", nodeReq(node1, "delete", "", "node2", ""), none, ""},
		{"deletecollection nodes", nodeReq(node1, "deletecollection", "", "", ""), none, ""},
		{"update own status", nodeReq(node1, "update", "status", "node1", ""), allow, ""},
		{"patch own status", nodeReq(node1, "patch", "status", "node1", ""), allow, ""},
		{"get own status", nodeReq(node1, "get", "status", "node1", ""), none, ""},
		{"proxy subresource", nodeReq(node1, "get", "proxy", "node1", ""), none, ""},

		// Static rules.
		{"create event", &request.Attributes{User: node1, ResourceRequest: true, Verb: "create", APIVersion: "v1", Namespace: "default", Resource: "events"}, allow, ""},
		{"patch event", &request.Attributes{User: node1, ResourceRequest: true, Verb: "patch", APIVersion: "v1", Namespace: "default", Resource: "events", Name: "e"}, allow, ""},
		{"update event", &request.Attributes{User: node1, ResourceRequest: true, Verb: "update", APIVersion: "v1", Namespace: "default", Resource: "events", Name: "e"}, allow, ""},
		{"list events", &request.Attributes{User: node1, ResourceRequest: true, Verb: "list", APIVersion: "v1", Namespace: "default", Resource: "events"}, none, ""},
		{"delete event", &request.Attributes{User: node1, ResourceRequest: true, Verb: "delete", APIVersion: "v1", Namespace: "default", Resource: "events", Name: "e"}, none, ""},
		{"events.k8s.io event", &request.Attributes{User: node1, ResourceRequest: true, Verb: "create", APIGroup: "events.k8s.io", APIVersion: "v1", Namespace: "default", Resource: "events"}, none, ""},
		{"subjectaccessreview", &request.Attributes{User: node1, ResourceRequest: true, Verb: "create", APIGroup: "authorization.k8s.io", APIVersion: "v1", Resource: "subjectaccessreviews"}, allow, ""},
		{"localsubjectaccessreview", &request.Attributes{User: node1, ResourceRequest: true, Verb: "create", APIGroup: "authorization.k8s.io", APIVersion: "v1", Namespace: "ns", Resource: "localsubjectaccessreviews"}, allow, ""},
		{"tokenreview", &request.Attributes{User: node1, ResourceRequest: true, Verb: "create", APIGroup: "authentication.k8s.io", APIVersion: "v1", Resource: "tokenreviews"}, allow, ""},
		{"pods are left to RBAC", &request.Attributes{User: node1, ResourceRequest: true, Verb: "list", APIVersion: "v1", Resource: "pods", FieldSelector: "spec.nodeName=node1"}, none, ""},
		{"other resources are left to RBAC", &request.Attributes{User: node1, ResourceRequest: true, Verb: "get", APIVersion: "v1", Resource: "namespaces", Name: "default"}, none, ""},
		{"non-resource path", &request.Attributes{User: node1, Path: "/healthz", Verb: "get"}, none, ""},
		{"non-resource path named like an event", &request.Attributes{User: node1, Path: "/api/v1/events", Verb: "create", Resource: "events"}, none, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, reason, err := node.Authorizer{}.Authorize(context.Background(), tc.attrs)
			if err != nil {
				t.Fatalf("Authorize: %v", err)
			}
			if got != tc.want || reason != tc.reason {
				t.Errorf("Authorize = (%v, %q), want (%v, %q)", got, reason, tc.want, tc.reason)
			}
		})
	}
}

// TestOtherNodeLease runs the node1/node2 lease matrix of Kubernetes'
// integration test: each node may operate on its own lease only.
func TestOtherNodeLease(t *testing.T) {
	for _, self := range []string{"node1", "node2"} {
		for _, owner := range []string{"node1", "node2"} {
			for _, verb := range []string{"get", "update", "patch", "delete"} {
				got, reason, _ := node.Authorizer{}.Authorize(context.Background(), leaseReq(nodeUser(self), verb, "kube-node-lease", owner))
				wantAllow := self == owner
				if (got == authz.DecisionAllow) != wantAllow {
					t.Errorf("%s %s lease of %s: got %v (%q), want allowed=%v", self, verb, owner, got, reason, wantAllow)
				}
			}
		}
	}
}

func TestIdentity(t *testing.T) {
	cases := []struct {
		user   request.User
		name   string
		isNode bool
	}{
		{nodeUser("n1"), "n1", true},
		{nodeUser(""), "", true},
		{nodeUser("a:b"), "a:b", true},
		{request.User{Name: "system:node:n1", Groups: []string{"system:authenticated"}}, "", false},
		{request.User{Name: "system:nodes", Groups: []string{"system:nodes"}}, "", false},
		{request.User{Name: "System:Node:n1", Groups: []string{"system:nodes"}}, "", false},
		{request.User{}, "", false},
	}
	for _, tc := range cases {
		name, isNode := node.Identity(&tc.user)
		if name != tc.name || isNode != tc.isNode {
			t.Errorf("Identity(%+v) = (%q, %v), want (%q, %v)", tc.user, name, isNode, tc.name, tc.isNode)
		}
	}
}

func TestRulesFor(t *testing.T) {
	got := node.Authorizer{}.RulesFor(context.Background(), nodeUser("node1"), "kube-node-lease")
	if !got.Incomplete || got.EvaluationError != "node authorizer does not support user rule resolution" || len(got.ResourceRules) != 0 {
		t.Errorf("node's rules = %+v, want incomplete with Kubernetes' error", got)
	}
	got = node.Authorizer{}.RulesFor(context.Background(), request.User{Name: "alice"}, "default")
	if got.Incomplete || got.EvaluationError != "" || len(got.ResourceRules)+len(got.NonResourceRules) != 0 {
		t.Errorf("user's rules = %+v, want nothing", got)
	}
}
