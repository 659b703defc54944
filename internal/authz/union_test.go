package authz_test

import (
	"context"
	"errors"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"

	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/request"
)

// fake answers every request alike and counts how often it was asked.
type fake struct {
	decision authz.Decision
	reason   string
	err      error
	calls    *int
}

func (f fake) Authorize(context.Context, *request.Attributes) (authz.Decision, string, error) {
	if f.calls != nil {
		*f.calls++
	}
	return f.decision, f.reason, f.err
}

func TestUnion(t *testing.T) {
	errA, errB := errors.New("a failed"), errors.New("b failed")
	cases := []struct {
		name       string
		union      authz.Union
		want       authz.Decision
		reason     string
		err        string
		laterCalls int
	}{
		{"empty", authz.Union{}, authz.DecisionNoOpinion, "", "", 0},
		{"first allow wins", authz.Union{fake{decision: authz.DecisionAllow, reason: "yes"}, fake{decision: authz.DecisionDeny}}, authz.DecisionAllow, "yes", "", 0},
		{"first deny wins", authz.Union{fake{decision: authz.DecisionDeny, reason: "no"}, fake{decision: authz.DecisionAllow}}, authz.DecisionDeny, "no", "", 0},
		{"no opinion continues to allow", authz.Union{fake{reason: "not me"}, fake{decision: authz.DecisionAllow, reason: "ok"}}, authz.DecisionAllow, "ok", "", 1},
		{"no opinion continues to deny", authz.Union{fake{reason: "not me"}, fake{decision: authz.DecisionDeny, reason: "denied"}}, authz.DecisionDeny, "denied", "", 1},
		{"all no opinion: reasons joined", authz.Union{fake{reason: "r1"}, fake{}, fake{reason: "r2"}}, authz.DecisionNoOpinion, "r1\nr2", "", 2},
		{"all no opinion: errors aggregated", authz.Union{fake{err: errA}, fake{reason: "r", err: errB}}, authz.DecisionNoOpinion, "r", "[a failed, b failed]", 1},
		{"one error alone is itself", authz.Union{fake{err: errA}, fake{}}, authz.DecisionNoOpinion, "", "a failed", 1},
		{"allow keeps only its own error", authz.Union{fake{err: errA}, fake{decision: authz.DecisionAllow, err: errB}}, authz.DecisionAllow, "", "b failed", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			u := append(authz.Union{}, tc.union...)
			u = append(u, fake{calls: &calls})
			got, reason, err := u.Authorize(context.Background(), &request.Attributes{})
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if got != tc.want || reason != tc.reason || gotErr != tc.err {
				t.Errorf("Authorize = (%v, %q, %q), want (%v, %q, %q)", got, reason, gotErr, tc.want, tc.reason, tc.err)
			}
			wantLater := 0
			if tc.want == authz.DecisionNoOpinion {
				wantLater = 1
			}
			if calls != wantLater {
				t.Errorf("the authorizer after the decision was asked %d times, want %d", calls, wantLater)
			}
		})
	}
}

type fakeRules authorizationv1.SubjectRulesReviewStatus

func (f fakeRules) RulesFor(context.Context, request.User, string) authorizationv1.SubjectRulesReviewStatus {
	return authorizationv1.SubjectRulesReviewStatus(f)
}

func TestUnionRules(t *testing.T) {
	u := authz.UnionRules{
		fakeRules{ResourceRules: []authorizationv1.ResourceRule{{Verbs: []string{"get"}, Resources: []string{"leases"}}}},
		fakeRules{Incomplete: true, EvaluationError: "e1"},
		fakeRules{NonResourceRules: []authorizationv1.NonResourceRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}}, EvaluationError: "e2"},
	}
	got := u.RulesFor(context.Background(), request.User{Name: "u"}, "ns")
	if len(got.ResourceRules) != 1 || got.ResourceRules[0].Resources[0] != "leases" ||
		len(got.NonResourceRules) != 1 || got.NonResourceRules[0].NonResourceURLs[0] != "/healthz" ||
		!got.Incomplete || got.EvaluationError != "[e1, e2]" {
		t.Errorf("RulesFor = %+v", got)
	}
	if got := (authz.UnionRules{fakeRules{}}).RulesFor(context.Background(), request.User{}, ""); got.Incomplete || got.EvaluationError != "" {
		t.Errorf("RulesFor of a complete resolver = %+v", got)
	}
}

func TestPrivilegedGroups(t *testing.T) {
	p := authz.PrivilegedGroups{request.SystemPrivilegedGroup}
	cases := []struct {
		groups []string
		want   authz.Decision
	}{
		{[]string{"system:authenticated", "system:masters"}, authz.DecisionAllow},
		{[]string{"system:authenticated"}, authz.DecisionNoOpinion},
		{[]string{"system:master", "masters"}, authz.DecisionNoOpinion},
		{nil, authz.DecisionNoOpinion},
	}
	for _, tc := range cases {
		got, reason, err := p.Authorize(context.Background(), &request.Attributes{User: request.User{Name: "u", Groups: tc.groups}})
		if got != tc.want || reason != "" || err != nil {
			t.Errorf("groups %v: Authorize = (%v, %q, %v), want (%v, \"\", nil)", tc.groups, got, reason, err, tc.want)
		}
	}
}

func TestAlways(t *testing.T) {
	ctx := context.Background()
	if d, r, err := (authz.AlwaysAllow{}).Authorize(ctx, &request.Attributes{}); d != authz.DecisionAllow || r != "" || err != nil {
		t.Errorf("AlwaysAllow = (%v, %q, %v)", d, r, err)
	}
	if d, r, err := (authz.AlwaysDeny{}).Authorize(ctx, &request.Attributes{}); d != authz.DecisionNoOpinion || r != "Everything is forbidden." || err != nil {
		t.Errorf("AlwaysDeny = (%v, %q, %v)", d, r, err)
	}
	all := (authz.AlwaysAllow{}).RulesFor(ctx, request.User{}, "")
	if len(all.ResourceRules) != 1 || all.ResourceRules[0].Verbs[0] != "*" || len(all.NonResourceRules) != 1 || all.NonResourceRules[0].NonResourceURLs[0] != "*" {
		t.Errorf("AlwaysAllow rules = %+v", all)
	}
	if none := (authz.AlwaysDeny{}).RulesFor(ctx, request.User{}, ""); len(none.ResourceRules)+len(none.NonResourceRules) != 0 || none.Incomplete {
		t.Errorf("AlwaysDeny rules = %+v", none)
	}
}
