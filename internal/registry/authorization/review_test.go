package authorization_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authenticationv1beta1 "k8s.io/api/authentication/v1beta1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/registry/authorization"
	"github.com/leasehold/leasehold/internal/request"
)

// fakeAuthorizer records what it was asked and answers as told.
type fakeAuthorizer struct {
	asked    *request.Attributes
	decision authz.Decision
	reason   string
	err      error
}

func (f *fakeAuthorizer) Authorize(_ context.Context, a *request.Attributes) (authz.Decision, string, error) {
	f.asked = a
	return f.decision, f.reason, f.err
}

type fakeResolver struct {
	user      request.User
	namespace string
}

func (f *fakeResolver) RulesFor(_ context.Context, u request.User, ns string) authorizationv1.SubjectRulesReviewStatus {
	f.user, f.namespace = u, ns
	return authorizationv1.SubjectRulesReviewStatus{
		ResourceRules: []authorizationv1.ResourceRule{{Verbs: []string{"get"}, APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}}},
	}
}

var alice = request.User{Name: "alice", UID: "u-1", Groups: []string{"devs", "system:authenticated"}, Extra: map[string][]string{"scopes": {"a"}}}

func find(t *testing.T, rs []*registry.Resource, group, resource string) *registry.Resource {
	t.Helper()
	for _, r := range rs {
		if r.GroupVersion.Group == group && r.Resource == resource {
			return r
		}
	}
	t.Fatalf("no %s %s", group, resource)
	return nil
}

func reviewAs(t *testing.T, res *registry.Resource, rec *request.Record, obj runtime.Object) (runtime.Object, error) {
	t.Helper()
	return res.Review(context.Background(), rec, obj)
}

func TestSelfSubjectAccessReview(t *testing.T) {
	fa := &fakeAuthorizer{decision: authz.DecisionAllow, reason: "because"}
	res := find(t, authorization.Resources(fa, &fakeResolver{}), "authorization.k8s.io", "selfsubjectaccessreviews")
	if res.Namespaced || res.Kind != "SelfSubjectAccessReview" || res.NewList != nil {
		t.Fatalf("descriptor %+v", res)
	}
	out, err := reviewAs(t, res, &request.Record{Attributes: request.Attributes{User: alice}}, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: "kube-node-lease", Verb: "update", Group: "coordination.k8s.io", Resource: "leases", Name: "n1",
			LabelSelector: &authorizationv1.LabelSelectorAttributes{RawSelector: "a=b"},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	st := out.(*authorizationv1.SelfSubjectAccessReview).Status
	if !st.Allowed || st.Denied || st.Reason != "because" || st.EvaluationError != "" {
		t.Errorf("status %+v", st)
	}
	a := fa.asked
	if a.User.Name != "alice" || !a.ResourceRequest || a.Verb != "update" || a.APIGroup != "coordination.k8s.io" ||
		a.APIVersion != "*" || a.Resource != "leases" || a.Namespace != "kube-node-lease" || a.Name != "n1" || a.LabelSelector != "a=b" {
		t.Errorf("asked %+v", a)
	}

	// Deny and an evaluation error, on a non-resource path.
	fa.decision, fa.reason, fa.err = authz.DecisionDeny, "no", errors.New("broken")
	out, err = reviewAs(t, res, &request.Record{Attributes: request.Attributes{User: alice}}, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	st = out.(*authorizationv1.SelfSubjectAccessReview).Status
	if st.Allowed || !st.Denied || st.Reason != "no" || st.EvaluationError != "broken" {
		t.Errorf("status %+v", st)
	}
	if fa.asked.ResourceRequest || fa.asked.Path != "/metrics" || fa.asked.Verb != "get" {
		t.Errorf("asked %+v", fa.asked)
	}
}

func wantInvalid(t *testing.T, err error, msg string) {
	t.Helper()
	if !apierrors.IsInvalid(err) || err.Error() != msg {
		t.Errorf("got %v\nwant 422 %s", err, msg)
	}
}

func wantBadRequest(t *testing.T, err error, msg string) {
	t.Helper()
	if !apierrors.IsBadRequest(err) || err.Error() != msg {
		t.Errorf("got %v\nwant 400 %s", err, msg)
	}
}

func TestAccessReviewValidation(t *testing.T) {
	rs := authorization.Resources(&fakeAuthorizer{}, &fakeResolver{})
	ssar := find(t, rs, "authorization.k8s.io", "selfsubjectaccessreviews")
	sar := find(t, rs, "authorization.k8s.io", "subjectaccessreviews")
	rec := &request.Record{Attributes: request.Attributes{User: alice}}

	_, err := reviewAs(t, ssar, rec, &authorizationv1.SelfSubjectAccessReview{})
	wantInvalid(t, err, `.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified`)

	_, err = reviewAs(t, ssar, rec, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes:    &authorizationv1.ResourceAttributes{Verb: "get"},
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/x", Verb: "get"},
	}})
	wantInvalid(t, err, `.authorization.k8s.io "" is invalid: spec.nonResourceAttributes: Invalid value: {"path":"/x","verb":"get"}: cannot be specified in combination with resourceAttributes`)

	_, err = reviewAs(t, sar, rec, &authorizationv1.SubjectAccessReview{
		ObjectMeta: metav1.ObjectMeta{Name: "x"},
		Spec:       authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get"}},
	})
	if err == nil || !apierrors.IsInvalid(err) {
		t.Fatalf("want invalid, got %v", err)
	}
	for _, part := range []string{`spec.user: Invalid value: "": at least one of user or group must be specified`, `metadata: Invalid value: `, `must be empty`} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("%v lacks %q", err, part)
		}
	}

	_, err = reviewAs(t, ssar, rec, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", FieldSelector: &authorizationv1.FieldSelectorAttributes{}},
	}})
	wantInvalid(t, err, `.authorization.k8s.io "" is invalid: spec.resourceAttributes.fieldSelector.requirements: Required value: when spec.resourceAttributes.fieldSelector is specified, requirements or rawSelector is required`)

	_, err = reviewAs(t, ssar, nil, &authorizationv1.SelfSubjectAccessReview{})
	wantBadRequest(t, err, "no user present on request")
}

func TestSubjectAccessReviewAsksForTheNamedSubject(t *testing.T) {
	fa := &fakeAuthorizer{decision: authz.DecisionNoOpinion}
	sar := find(t, authorization.Resources(fa, &fakeResolver{}), "authorization.k8s.io", "subjectaccessreviews")
	out, err := reviewAs(t, sar, &request.Record{Attributes: request.Attributes{User: alice}}, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:node:n1", Groups: []string{"system:nodes"}, UID: "u2",
			Extra: map[string]authorizationv1.ExtraValue{"k": {"v"}},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: "list", Resource: "nodes", Version: "v1",
				FieldSelector: &authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{
					{Key: "metadata.name", Operator: metav1.FieldSelectorOpIn, Values: []string{"n1"}},
					{Key: "spec.x", Operator: metav1.FieldSelectorOpExists},
				}},
				LabelSelector: &authorizationv1.LabelSelectorAttributes{RawSelector: "!!"},
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	a := fa.asked
	if a.User.Name != "system:node:n1" || a.User.UID != "u2" || a.User.Groups[0] != "system:nodes" || a.User.Extra["k"][0] != "v" ||
		a.APIVersion != "v1" || a.FieldSelector != "metadata.name=n1" || a.LabelSelector != "" {
		t.Errorf("asked %+v", a)
	}
	st := out.(*authorizationv1.SubjectAccessReview).Status
	want := "spec.resourceAttributes.fieldSelector partially ignored due to parse error; spec.resourceAttributes.labelSelector ignored due to parse error"
	if st.Allowed || st.Denied || st.EvaluationError != want {
		t.Errorf("status %+v", st)
	}
}

func TestLocalSubjectAccessReview(t *testing.T) {
	fa := &fakeAuthorizer{decision: authz.DecisionAllow}
	lsar := find(t, authorization.Resources(fa, &fakeResolver{}), "authorization.k8s.io", "localsubjectaccessreviews")
	if !lsar.Namespaced {
		t.Fatal("LocalSubjectAccessReview must be namespaced")
	}
	rec := &request.Record{Attributes: request.Attributes{User: alice, Namespace: "team-a"}}
	spec := func(ns string) authorizationv1.SubjectAccessReviewSpec {
		return authorizationv1.SubjectAccessReviewSpec{User: "bob", ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Resource: "leases"}}
	}
	out, err := reviewAs(t, lsar, rec, &authorizationv1.LocalSubjectAccessReview{Spec: spec("team-a")})
	if err != nil {
		t.Fatal(err)
	}
	if got := out.(*authorizationv1.LocalSubjectAccessReview); !got.Status.Allowed || got.Namespace != "team-a" || fa.asked.User.Name != "bob" {
		t.Errorf("answer %+v, asked %+v", got, fa.asked)
	}

	_, err = reviewAs(t, lsar, rec, &authorizationv1.LocalSubjectAccessReview{Spec: spec("team-b")})
	wantInvalid(t, err, `.authorization.k8s.io "" is invalid: spec.resourceAttributes.namespace: Invalid value: "team-b": must match metadata.namespace`)

	_, err = reviewAs(t, lsar, rec, &authorizationv1.LocalSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b"}, Spec: spec("team-b")})
	wantBadRequest(t, err, "the namespace of the provided object does not match the namespace sent on the request")

	_, err = reviewAs(t, lsar, rec, &authorizationv1.LocalSubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: "bob", NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
	}})
	wantInvalid(t, err, `.authorization.k8s.io "" is invalid: spec.nonResourceAttributes: Invalid value: {"path":"/metrics","verb":"get"}: disallowed on this kind of request`)
}

func TestSelfSubjectRulesReview(t *testing.T) {
	fr := &fakeResolver{}
	ssrr := find(t, authorization.Resources(&fakeAuthorizer{}, fr), "authorization.k8s.io", "selfsubjectrulesreviews")
	rec := &request.Record{Attributes: request.Attributes{User: alice}}
	out, err := reviewAs(t, ssrr, rec, &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "default"}})
	if err != nil {
		t.Fatal(err)
	}
	st := out.(*authorizationv1.SelfSubjectRulesReview).Status
	if fr.user.Name != "alice" || fr.namespace != "default" || len(st.ResourceRules) != 1 || st.NonResourceRules == nil {
		t.Errorf("resolver asked %+v %q, status %+v", fr.user, fr.namespace, st)
	}
	_, err = reviewAs(t, ssrr, rec, &authorizationv1.SelfSubjectRulesReview{})
	wantBadRequest(t, err, "no namespace on request")
}

func TestSelfSubjectReview(t *testing.T) {
	rs := authorization.Resources(&fakeAuthorizer{}, &fakeResolver{})
	var v1, v1beta1 *registry.Resource
	for _, r := range rs {
		if r.Resource == "selfsubjectreviews" {
			switch r.GroupVersion.Version {
			case "v1":
				v1 = r
			case "v1beta1":
				v1beta1 = r
			}
		}
	}
	rec := &request.Record{Attributes: request.Attributes{User: alice}}
	out, err := reviewAs(t, v1, rec, &authenticationv1.SelfSubjectReview{})
	if err != nil {
		t.Fatal(err)
	}
	ui := out.(*authenticationv1.SelfSubjectReview).Status.UserInfo
	if ui.Username != "alice" || ui.UID != "u-1" || len(ui.Groups) != 2 || ui.Extra["scopes"][0] != "a" {
		t.Errorf("v1 userInfo %+v", ui)
	}
	out, err = reviewAs(t, v1beta1, rec, &authenticationv1beta1.SelfSubjectReview{})
	if err != nil {
		t.Fatal(err)
	}
	if ui := out.(*authenticationv1beta1.SelfSubjectReview).Status.UserInfo; ui.Username != "alice" {
		t.Errorf("v1beta1 userInfo %+v", ui)
	}
}
