package chain_test

import (
	"context"
	"slices"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/authz/chain"
	"github.com/leasehold/leasehold/internal/request"
)

func TestParseModes(t *testing.T) {
	cases := []struct {
		in   []string
		want []chain.Mode
		err  string
	}{
		{chain.DefaultModes(), []chain.Mode{chain.ModeNode, chain.ModeRBAC}, ""},
		{[]string{"RBAC", "Node"}, []chain.Mode{chain.ModeRBAC, chain.ModeNode}, ""},
		{[]string{"AlwaysAllow"}, []chain.Mode{chain.ModeAlwaysAllow}, ""},
		{[]string{"AlwaysDeny", "RBAC"}, []chain.Mode{chain.ModeAlwaysDeny, chain.ModeRBAC}, ""},
		{nil, nil, "at least one authorization-mode must be passed"},
		{[]string{"Node", "rbac"}, nil, `authorization-mode "rbac" is not a valid mode`},
		{[]string{"Node", "RBAC", "Node"}, nil, `authorization-mode ["Node" "RBAC" "Node"] has mode specified more than once`},
		{[]string{"Webhook"}, nil, `authorization-mode "Webhook" is not supported by leasehold (supported: AlwaysAllow,AlwaysDeny,Node,RBAC)`},
		{[]string{"Bogus", "Bogus"}, nil, `[authorization-mode "Bogus" is not a valid mode, authorization-mode ["Bogus" "Bogus"] has mode specified more than once]`},
	}
	for _, tc := range cases {
		got, err := chain.ParseModes(tc.in)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if gotErr != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("ParseModes(%q) = (%v, %q), want (%v, %q)", tc.in, got, gotErr, tc.want, tc.err)
		}
	}
}

// fakeRBAC stands in for the RBAC authorizer: it allows user "rbac-ok",
// records who it was asked about and lists one rule.
type fakeRBAC struct{ asked *[]string }

func (f fakeRBAC) Authorize(_ context.Context, a *request.Attributes) (authz.Decision, string, error) {
	*f.asked = append(*f.asked, a.User.Name)
	if a.User.Name == "rbac-ok" {
		return authz.DecisionAllow, `RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "r" to User "rbac-ok"`, nil
	}
	return authz.DecisionNoOpinion, "", nil
}

func (f fakeRBAC) RulesFor(context.Context, request.User, string) authorizationv1.SubjectRulesReviewStatus {
	return authorizationv1.SubjectRulesReviewStatus{ResourceRules: []authorizationv1.ResourceRule{{Verbs: []string{"get"}}}}
}

func leaseReq(u request.User, verb, name string) *request.Attributes {
	return &request.Attributes{User: u, ResourceRequest: true, Verb: verb, APIGroup: "coordination.k8s.io",
		APIVersion: "v1", Namespace: "kube-node-lease", Resource: "leases", Name: name}
}

// TestDefaultChainOrder checks Privileged → Node → RBAC with RBAC faked:
// who answers, with which reason, and whether RBAC is asked.
func TestDefaultChainOrder(t *testing.T) {
	var asked []string
	modes, err := chain.ParseModes(chain.DefaultModes())
	if err != nil {
		t.Fatal(err)
	}
	c, err := chain.New(modes, chain.RBAC{Authorizer: fakeRBAC{&asked}, Rules: fakeRBAC{&asked}})
	if err != nil {
		t.Fatal(err)
	}
	node1 := request.User{Name: "system:node:node1", Groups: []string{"system:nodes", "system:authenticated"}}
	admin := request.User{Name: "root", Groups: []string{"system:masters", "system:authenticated"}}
	cases := []struct {
		name      string
		attrs     *request.Attributes
		want      authz.Decision
		reason    string
		rbacAsked bool
	}{
		{"masters never reach Node or RBAC", leaseReq(admin, "delete", "node2"), authz.DecisionAllow, "", false},
		{"node's own lease: Node allows, RBAC not asked", leaseReq(node1, "update", "node1"), authz.DecisionAllow, "", false},
		{"node's other lease: Node's reason, RBAC asked", leaseReq(node1, "get", "node2"), authz.DecisionNoOpinion,
			"can only access node lease with the same name as the requesting node", true},
		{"node deleting itself: no reason at all", &request.Attributes{User: node1, ResourceRequest: true, Verb: "delete", APIVersion: "v1", Resource: "nodes", Name: "node1"},
			authz.DecisionNoOpinion, "", true},
		{"RBAC allows a user", leaseReq(request.User{Name: "rbac-ok"}, "get", "x"), authz.DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "r" to User "rbac-ok"`, true},
		{"nobody allows", leaseReq(request.User{Name: "alice"}, "get", "x"), authz.DecisionNoOpinion, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			asked = nil
			got, reason, err := c.Authorizer.Authorize(context.Background(), tc.attrs)
			if err != nil || got != tc.want || reason != tc.reason {
				t.Errorf("Authorize = (%v, %q, %v), want (%v, %q, nil)", got, reason, err, tc.want, tc.reason)
			}
			if (len(asked) > 0) != tc.rbacAsked {
				t.Errorf("RBAC asked about %v, want asked=%v", asked, tc.rbacAsked)
			}
		})
	}

	rules := c.Rules.RulesFor(context.Background(), node1, "kube-node-lease")
	if !rules.Incomplete || rules.EvaluationError != "node authorizer does not support user rule resolution" || len(rules.ResourceRules) != 1 {
		t.Errorf("node's rules = %+v, want RBAC's rule, incomplete, with the Node authorizer's error", rules)
	}
}

func TestModesChangeTheChain(t *testing.T) {
	var asked []string
	alice := leaseReq(request.User{Name: "alice"}, "get", "x")
	node1 := leaseReq(request.User{Name: "system:node:node1", Groups: []string{"system:nodes"}}, "update", "node1")
	cases := []struct {
		modes  []chain.Mode
		attrs  *request.Attributes
		want   authz.Decision
		reason string
	}{
		{[]chain.Mode{chain.ModeRBAC}, node1, authz.DecisionNoOpinion, ""},
		{[]chain.Mode{chain.ModeAlwaysAllow}, alice, authz.DecisionAllow, ""},
		{[]chain.Mode{chain.ModeAlwaysDeny}, alice, authz.DecisionNoOpinion, "Everything is forbidden."},
		{[]chain.Mode{chain.ModeAlwaysDeny, chain.ModeNode}, node1, authz.DecisionAllow, ""},
		{[]chain.Mode{chain.ModeNode, chain.ModeAlwaysDeny}, leaseReq(request.User{Name: "system:node:node1", Groups: []string{"system:nodes"}}, "get", "node2"),
			authz.DecisionNoOpinion, "can only access node lease with the same name as the requesting node\nEverything is forbidden."},
	}
	for _, tc := range cases {
		c, err := chain.New(tc.modes, chain.RBAC{Authorizer: fakeRBAC{&asked}, Rules: fakeRBAC{&asked}})
		if err != nil {
			t.Fatal(err)
		}
		got, reason, err := c.Authorizer.Authorize(context.Background(), tc.attrs)
		if err != nil || got != tc.want || reason != tc.reason {
			t.Errorf("modes %v: Authorize = (%v, %q, %v), want (%v, %q, nil)", tc.modes, got, reason, err, tc.want, tc.reason)
		}
	}
}

func TestNewErrors(t *testing.T) {
	const needRBAC = "build authorization chain: authorization-mode RBAC needs the RBAC authorizer and rule resolver"
	if _, err := chain.New([]chain.Mode{chain.ModeNode, chain.ModeRBAC}, chain.RBAC{}); err == nil || err.Error() != needRBAC {
		t.Errorf("RBAC without an authorizer: err = %v", err)
	}
	var asked []string
	if _, err := chain.New([]chain.Mode{chain.ModeRBAC}, chain.RBAC{Authorizer: fakeRBAC{&asked}}); err == nil || err.Error() != needRBAC {
		t.Errorf("RBAC without a rule resolver: err = %v", err)
	}
	if _, err := chain.New(nil, chain.RBAC{}); err == nil {
		t.Error("no modes: no error")
	}
	if _, err := chain.New([]chain.Mode{"ABAC"}, chain.RBAC{}); err == nil || err.Error() != `build authorization chain: authorization-mode "ABAC" is not a valid mode` {
		t.Errorf("unknown mode: err = %v", err)
	}
	// Without RBAC the RBAC authorizer may be nil.
	if _, err := chain.New([]chain.Mode{chain.ModeNode, chain.ModeAlwaysDeny}, chain.RBAC{}); err != nil {
		t.Errorf("Node,AlwaysDeny: %v", err)
	}
}
