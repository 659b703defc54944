package cluster

import (
	"testing"

	"github.com/leasehold/leasehold/internal/request"
)

// TestReviewKeyTellsQuestionsApart: two questions share a cached answer
// only when every field of their SubjectAccessReviews is equal, so that a
// cached allow never answers another user, group, extra value, verb,
// namespace or name.
func TestReviewKeyTellsQuestionsApart(t *testing.T) {
	base := request.Attributes{
		User:            request.User{Name: "alice", UID: "u1", Groups: []string{"g1", "system:authenticated"}, Extra: map[string][]string{"scopes": {"a", "b"}}},
		ResourceRequest: true, Verb: "get", APIGroup: "coordination.k8s.io", APIVersion: "v1",
		Namespace: "ns", Resource: "leases", Name: "l",
	}
	variants := map[string]func(a *request.Attributes){
		"user":        func(a *request.Attributes) { a.User.Name = "bob" },
		"uid":         func(a *request.Attributes) { a.User.UID = "u2" },
		"group":       func(a *request.Attributes) { a.User.Groups = []string{"g1"} },
		"group split": func(a *request.Attributes) { a.User.Groups = []string{"g1system:authenticated"} },
		"extra value": func(a *request.Attributes) { a.User.Extra = map[string][]string{"scopes": {"a"}} },
		"extra key":   func(a *request.Attributes) { a.User.Extra = map[string][]string{"scope": {"a", "b"}} },
		"verb":        func(a *request.Attributes) { a.Verb = "update" },
		"namespace":   func(a *request.Attributes) { a.Namespace = "other" },
		"name":        func(a *request.Attributes) { a.Name = "m" },
		"subresource": func(a *request.Attributes) { a.Subresource = "status" },
		"non-resource": func(a *request.Attributes) {
			*a = request.Attributes{User: a.User, Path: "/apis", Verb: "get"}
		},
	}
	spec := reviewSpec(&base)
	want := reviewKey(&spec)
	seen := map[string]string{want: "base"}
	for name, change := range variants {
		a := base
		a.User.Extra = map[string][]string{"scopes": {"a", "b"}}
		change(&a)
		s := reviewSpec(&a)
		k := reviewKey(&s)
		if other, dup := seen[k]; dup {
			t.Errorf("%s and %s share a review cache key", name, other)
		}
		seen[k] = name
	}
	again := reviewSpec(&base)
	if reviewKey(&again) != want {
		t.Errorf("the same question gave two keys")
	}
	if spec.ResourceAttributes == nil || spec.ResourceAttributes.Namespace != "ns" || spec.ResourceAttributes.Group != "coordination.k8s.io" || spec.User != "alice" || len(spec.Extra["scopes"]) != 2 {
		t.Errorf("review spec %+v does not ask about the request", spec)
	}
}
