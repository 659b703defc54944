package audit

import (
	"os"
	"testing"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/leasehold/leasehold/internal/request"
)

func TestDefaultPolicy(t *testing.T) {
	p, err := DefaultPolicy()
	if err != nil {
		t.Fatal(err)
	}
	node := request.User{Name: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}}
	admin := request.User{Name: "kubernetes-admin", Groups: []string{"system:masters", "system:authenticated"}}
	gc := request.User{Name: "system:serviceaccount:kube-system:generic-garbage-collector",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}}
	lease := func(u request.User, verb, ns string) request.Attributes {
		return request.Attributes{User: u, ResourceRequest: true, Verb: verb, APIGroup: "coordination.k8s.io",
			APIVersion: "v1", Namespace: ns, Resource: "leases", Name: "n1"}
	}
	cases := []struct {
		name  string
		attrs request.Attributes
		want  auditv1.Level
	}{
		{"node lease renewal (update)", lease(node, "update", "kube-node-lease"), auditv1.LevelNone},
		{"node lease renewal (patch)", lease(node, "patch", "kube-node-lease"), auditv1.LevelNone},
		{"node gets its lease (rare: the 404s after a deletion)", lease(node, "get", "kube-node-lease"), auditv1.LevelMetadata},
		{"node watches leases", lease(node, "watch", "kube-node-lease"), auditv1.LevelNone},
		{"node creates its lease", lease(node, "create", "kube-node-lease"), auditv1.LevelMetadata},
		{"node deletes its lease", lease(node, "delete", "kube-node-lease"), auditv1.LevelRequestResponse},
		{"elector renews in another namespace", lease(request.User{Name: "elector", Groups: []string{"system:authenticated"}}, "update", "default"), auditv1.LevelMetadata},
		{"admin updates a node lease", lease(admin, "update", "kube-node-lease"), auditv1.LevelMetadata},
		{"garbage collector deletes a lease", lease(gc, "delete", "kube-node-lease"), auditv1.LevelRequestResponse},
		{"admin deletes a node", request.Attributes{User: admin, ResourceRequest: true, Verb: "delete", APIVersion: "v1", Resource: "nodes", Name: "n1"}, auditv1.LevelRequestResponse},
		{"node patches its status", request.Attributes{User: node, ResourceRequest: true, Verb: "patch", APIVersion: "v1", Resource: "nodes", Subresource: "status", Name: "n1"}, auditv1.LevelMetadata},
		{"RBAC binding created", request.Attributes{User: admin, ResourceRequest: true, Verb: "create", APIGroup: "rbac.authorization.k8s.io", APIVersion: "v1", Resource: "rolebindings", Namespace: "default"}, auditv1.LevelRequestResponse},
		{"RBAC roles listed", request.Attributes{User: admin, ResourceRequest: true, Verb: "list", APIGroup: "rbac.authorization.k8s.io", APIVersion: "v1", Resource: "roles"}, auditv1.LevelMetadata},
		{"health check", request.Attributes{Path: "/readyz", Verb: "get"}, auditv1.LevelNone},
		{"metrics scrape", request.Attributes{User: admin, Path: "/metrics", Verb: "get"}, auditv1.LevelMetadata},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := p.Evaluate(&c.attrs)
			if got.Level != c.want {
				t.Errorf("level = %q, want %q", got.Level, c.want)
			}
			if len(got.OmitStages) != 1 || got.OmitStages[0] != auditv1.StageRequestReceived {
				t.Errorf("omitStages = %v, want [RequestReceived]", got.OmitStages)
			}
		})
	}
}

func TestDocsPolicyIsDefault(t *testing.T) {
	docs, err := os.ReadFile("../../docs/audit-policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if string(docs) != DefaultPolicyYAML() {
		t.Error("docs/audit-policy.yaml differs from internal/audit/default-policy.yaml; copy one to the other")
	}
}
