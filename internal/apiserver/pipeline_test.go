package apiserver_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/internal/admission"
	"github.com/leasehold/leasehold/internal/apiserver"
	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/request"
	"github.com/leasehold/leasehold/internal/served"
)

// authorizerFunc adapts a function to authz.Authorizer.
type authorizerFunc func(a *request.Attributes) (authz.Decision, string, error)

func (f authorizerFunc) Authorize(_ context.Context, a *request.Attributes) (authz.Decision, string, error) {
	return f(a)
}

// admitterFunc adapts a function to admission.Interface.
type admitterFunc func(a *admission.Attributes) error

func (f admitterFunc) Admit(_ context.Context, a *admission.Attributes) error { return f(a) }

// authenticatorFunc adapts a function to authn.Authenticator.
type authenticatorFunc func(r *http.Request) (request.User, bool, error)

func (f authenticatorFunc) AuthenticateRequest(r *http.Request) (request.User, bool, error) {
	return f(r)
}

func send(h http.Handler, method, path, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func wantResponse(t *testing.T, rec *httptest.ResponseRecorder, code int, body string) {
	t.Helper()
	if got := strings.TrimSpace(rec.Body.String()); rec.Code != code || got != body {
		t.Errorf("got %d %s\nwant %d %s", rec.Code, got, code, body)
	}
}

const (
	leaseNS   = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
	leaseBody = `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l1"},"spec":{"holderIdentity":"a"}}`
)

// records collects the finished records the end-of-request hook receives.
type records struct {
	mu   sync.Mutex
	list []request.Record
}

func (r *records) finish(rec *request.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, *rec)
}

func (r *records) last(t *testing.T) request.Record {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.list) == 0 {
		t.Fatal("no request finished")
	}
	return r.list[len(r.list)-1]
}

// TestUnauthorizedBody checks both ways to fail authentication get
// kube-apiserver's exact 401 Status, and that nothing later runs.
func TestUnauthorizedBody(t *testing.T) {
	const body = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`
	for name, authn := range map[string]authenticatorFunc{
		"invalid credential": func(*http.Request) (request.User, bool, error) { return request.User{}, false, errors.New("bad token") },
		"no credential":      func(*http.Request) (request.User, bool, error) { return request.User{}, false, nil },
	} {
		t.Run(name, func(t *testing.T) {
			authorized := false
			h := newDirectHandler(t, func(c *apiserver.Config) {
				c.Authenticator = authn
				c.Authorizer = authorizerFunc(func(*request.Attributes) (authz.Decision, string, error) {
					authorized = true
					return authz.DecisionAllow, "", nil
				})
			})
			wantResponse(t, send(h.api, "GET", leaseNS, ""), http.StatusUnauthorized, body)
			// Non-resource paths are authenticated too.
			wantResponse(t, send(h.api, "GET", "/healthz", ""), http.StatusUnauthorized, body)
			if authorized {
				t.Error("the authorizer ran for an unauthenticated request")
			}
		})
	}
}

// TestForbiddenBodies checks the three shapes of kube-apiserver's 403
// message byte for byte, and that a denied request stops before its verb.
func TestForbiddenBodies(t *testing.T) {
	var recs records
	h := newDirectHandler(t, func(c *apiserver.Config) {
		c.Authenticator = authenticatorFunc(func(r *http.Request) (request.User, bool, error) {
			return request.User{Name: r.Header.Get("X-Test-User"), Groups: []string{request.AllAuthenticated}}, true, nil
		})
		c.Authorizer = authorizerFunc(func(a *request.Attributes) (authz.Decision, string, error) {
			switch a.User.Name {
			case "admin":
				return authz.DecisionAllow, "admin may", nil
			case "alice":
				return authz.DecisionDeny, `no <rule> for "alice"`, nil
			}
			return authz.DecisionNoOpinion, "", nil
		})
		c.Finish = recs.finish
	})
	as := func(user, method, path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Test-User", user)
		rec := httptest.NewRecorder()
		h.api.ServeHTTP(rec, req)
		return rec
	}
	if rec := as("admin", "POST", "/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"}}`); rec.Code != http.StatusCreated {
		t.Fatalf("admin creating a namespace: %d %s", rec.Code, rec.Body)
	}
	if got := recs.last(t); got.Decision != "allow" || got.Reason != "admin may" || got.Code != http.StatusCreated || got.User.Name != "admin" {
		t.Errorf("allowed record: %+v", got)
	}

	// Namespaced, named, with a reason (not escaped: only the generated
	// part is).
	wantResponse(t, as("alice", "POST", leaseNS, leaseBody), http.StatusForbidden,
		`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"leases.coordination.k8s.io is forbidden: User \"alice\" cannot create resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"default\": no \u003crule\u003e for \"alice\"","reason":"Forbidden","details":{"group":"coordination.k8s.io","kind":"leases"},"code":403}`)
	if got := recs.last(t); got.Decision != "forbid" || got.Reason != `no <rule> for "alice"` || got.Code != http.StatusForbidden {
		t.Errorf("denied record: %+v", got)
	}
	// The create never ran.
	if rec := as("admin", "GET", leaseNS+"/l1", ""); rec.Code != http.StatusNotFound {
		t.Errorf("the denied create stored its lease: %d %s", rec.Code, rec.Body)
	}
	wantResponse(t, as("alice", "PUT", leaseNS+"/l1/status", leaseBody), http.StatusForbidden,
		`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"leases.coordination.k8s.io \"l1\" is forbidden: User \"alice\" cannot update resource \"leases/status\" in API group \"coordination.k8s.io\" in the namespace \"default\": no \u003crule\u003e for \"alice\"","reason":"Forbidden","details":{"name":"l1","group":"coordination.k8s.io","kind":"leases"},"code":403}`)
	// Core group, cluster scope, no reason (NoOpinion).
	wantResponse(t, as("bob", "GET", "/api/v1/nodes/n1", ""), http.StatusForbidden,
		`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"nodes \"n1\" is forbidden: User \"bob\" cannot get resource \"nodes\" in API group \"\" at the cluster scope","reason":"Forbidden","details":{"name":"n1","kind":"nodes"},"code":403}`)
	// Non-resource, with the user's name HTML-escaped.
	wantResponse(t, as("<b>&", "GET", "/metrics", ""), http.StatusForbidden,
		`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"\u0026lt;b\u0026gt;\u0026amp;\" cannot get path \"/metrics\"","reason":"Forbidden","details":{},"code":403}`)
}

// TestAuthorizerErrorIsInternalError checks a failing authorizer gets a
// 500 whose text reveals nothing of the failure.
func TestAuthorizerErrorIsInternalError(t *testing.T) {
	var recs records
	h := newDirectHandler(t, func(c *apiserver.Config) {
		c.Authorizer = authorizerFunc(func(*request.Attributes) (authz.Decision, string, error) {
			return authz.DecisionNoOpinion, "", errors.New("policy store unreachable")
		})
		c.Finish = recs.finish
	})
	wantResponse(t, send(h.api, "GET", leaseNS, ""), http.StatusInternalServerError,
		`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Internal error occurred: internal error","reason":"InternalError","details":{"causes":[{"message":"internal error"}]},"code":500}`)
	if got := recs.last(t); got.Reason != "internal error" || got.Decision != "forbid" {
		t.Errorf("record: %+v", got)
	}
}

// TestAttributesOfAList checks what the authorizer is given for a list of
// one object by name (a node watching its own Node): the name from the
// field selector, and both selectors raw.
func TestAttributesOfAList(t *testing.T) {
	var seen request.Attributes
	h := newDirectHandler(t, func(c *apiserver.Config) {
		c.Authorizer = authorizerFunc(func(a *request.Attributes) (authz.Decision, string, error) {
			seen = *a
			return authz.DecisionAllow, "", nil
		})
	})
	send(h.api, "GET", "/api/v1/nodes?fieldSelector=metadata.name%3Dnode-1&labelSelector=a%3Db", "")
	want := request.Attributes{User: seen.User, ResourceRequest: true, Path: "/api/v1/nodes", Verb: "list", APIVersion: "v1",
		Resource: "nodes", Name: "node-1", FieldSelector: "metadata.name=node-1", LabelSelector: "a=b"}
	if seen.User.Name != "bench" || !equalAttributes(seen, want) {
		t.Errorf("authorizer saw %+v, want %+v", seen, want)
	}
	send(h.api, "GET", "/api/v1/namespaces/ns-1", "")
	if seen.Namespace != "ns-1" || seen.Name != "ns-1" || seen.Resource != "namespaces" {
		t.Errorf("a namespace's get is authorized in itself, as kube-apiserver: %+v", seen)
	}
}

func equalAttributes(a, b request.Attributes) bool {
	a.User, b.User = request.User{}, request.User{}
	return reflect.DeepEqual(a, b)
}

// TestAdmission checks every kind of write reaches admission with its
// objects, after validation, and that a refusal reaches the client as it
// is, with nothing stored.
func TestAdmission(t *testing.T) {
	type call struct {
		op        admission.Operation
		name      string
		obj, old  bool
		holder    string
		verb      string
		namespace string
	}
	var (
		mu     sync.Mutex
		calls  []call
		refuse bool
	)
	refusal := apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "l1", errors.New("not your lease"))
	h := newDirectHandler(t, func(c *apiserver.Config) {
		c.Admission = admitterFunc(func(a *admission.Attributes) error {
			mu.Lock()
			defer mu.Unlock()
			c := call{op: a.Operation, name: a.Name, obj: a.Object != nil, old: a.OldObject != nil, verb: a.Verb, namespace: a.Namespace}
			if l, ok := a.Object.(*coordinationv1.Lease); ok && l.Spec.HolderIdentity != nil {
				c.holder = *l.Spec.HolderIdentity
			}
			calls = append(calls, c)
			if refuse && a.Resource == "leases" {
				return refusal
			}
			return nil
		})
	})
	mustCode := func(rec *httptest.ResponseRecorder, code int) {
		t.Helper()
		if rec.Code != code {
			t.Fatalf("got %d %s, want %d", rec.Code, rec.Body, code)
		}
	}
	mustCode(send(h.api, "POST", "/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default"}}`), http.StatusCreated)
	// Invalid objects are refused by validation before admission.
	mustCode(send(h.api, "POST", leaseNS, `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"Bad_Name"}}`), http.StatusUnprocessableEntity)
	mustCode(send(h.api, "POST", leaseNS, leaseBody), http.StatusCreated)
	created := send(h.api, "GET", leaseNS+"/l1", "").Body.String()
	mustCode(send(h.api, "PUT", leaseNS+"/l1", strings.Replace(created, `"holderIdentity":"a"`, `"holderIdentity":"b"`, 1)), http.StatusOK)
	req := httptest.NewRequest("PATCH", leaseNS+"/l1", strings.NewReader(`{"spec":{"holderIdentity":"c"}}`))
	req.Header.Set("Content-Type", "application/merge-patch+json")
	patched := httptest.NewRecorder()
	h.api.ServeHTTP(patched, req)
	mustCode(patched, http.StatusOK)

	refuse = true
	rec := send(h.api, "DELETE", leaseNS+"/l1", "")
	wantResponse(t, rec, http.StatusForbidden, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"leases.coordination.k8s.io \"l1\" is forbidden: not your lease","reason":"Forbidden","details":{"name":"l1","group":"coordination.k8s.io","kind":"leases"},"code":403}`)
	mustCode(send(h.api, "GET", leaseNS+"/l1", ""), http.StatusOK)
	refuse = false
	mustCode(send(h.api, "DELETE", leaseNS, ""), http.StatusOK)

	want := []call{
		{op: admission.Create, name: "default", obj: true, verb: "create"},
		{op: admission.Create, name: "l1", obj: true, holder: "a", verb: "create", namespace: "default"},
		{op: admission.Update, name: "l1", obj: true, old: true, holder: "b", verb: "update", namespace: "default"},
		{op: admission.Update, name: "l1", obj: true, old: true, holder: "c", verb: "patch", namespace: "default"},
		{op: admission.Delete, name: "l1", old: true, verb: "delete", namespace: "default"},
		// Each item of a deletecollection, under its own name.
		{op: admission.Delete, name: "l1", old: true, verb: "deletecollection", namespace: "default"},
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != len(want) {
		t.Fatalf("admission calls %+v, want %+v", calls, want)
	}
	for i := range want {
		if calls[i] != want[i] {
			t.Errorf("admission call %d: %+v, want %+v", i, calls[i], want[i])
		}
	}
}

// TestReviewResource checks a resource with a Review hook answers creates
// with the hook's object (which sees the caller), stores nothing, and
// refuses every other verb.
func TestReviewResource(t *testing.T) {
	gv := authenticationv1.SchemeGroupVersion
	review := &registry.Resource{
		GroupVersion: gv, Resource: "selfsubjectreviews", SingularName: "selfsubjectreview", Kind: "SelfSubjectReview",
		New:     func() runtime.Object { return &authenticationv1.SelfSubjectReview{} },
		NewList: func() runtime.Object { return &metav1.List{} },
		Review: func(_ context.Context, rec *request.Record, obj runtime.Object) (runtime.Object, error) {
			out := obj.(*authenticationv1.SelfSubjectReview).DeepCopy()
			out.Status.UserInfo = authenticationv1.UserInfo{Username: rec.User.Name, Groups: rec.User.Groups}
			return out, nil
		},
	}
	h := newDirectHandler(t, func(c *apiserver.Config) {
		c.Authenticator = asUser(request.User{Name: "carol", Groups: []string{"dev"}})
		scheme, err := served.NewScheme()
		if err != nil {
			t.Fatal(err)
		}
		if err := authenticationv1.AddToScheme(scheme); err != nil {
			t.Fatal(err)
		}
		c.Scheme = scheme
		c.Resources = registry.NewSet(append(served.Stored(time.Now).All(), review)...)
		c.TypeConverter = nil
	})
	path := "/apis/authentication.k8s.io/v1/selfsubjectreviews"
	wantResponse(t, send(h.api, "POST", path, `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`), http.StatusCreated,
		`{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1","metadata":{},"status":{"userInfo":{"username":"carol","groups":["dev"]}}}`)
	wantResponse(t, send(h.api, "GET", path, ""), http.StatusMethodNotAllowed,
		`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"list is not supported on resources of kind \"selfsubjectreviews.authentication.k8s.io\"","reason":"MethodNotAllowed","details":{"group":"authentication.k8s.io","kind":"selfsubjectreviews"},"code":405}`)
	if rec := send(h.api, "DELETE", path+"/x", ""); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("delete of a review: %d %s", rec.Code, rec.Body)
	}
}

// TestLoopbackIdentity checks in-process clients are authenticated as the
// identity they were given, without consulting the authenticator, and are
// then authorized like everyone else.
func TestLoopbackIdentity(t *testing.T) {
	var (
		mu   sync.Mutex
		seen []request.User
	)
	h := newDirectHandler(t, func(c *apiserver.Config) {
		c.Authenticator = authenticatorFunc(func(*http.Request) (request.User, bool, error) {
			return request.User{}, false, errors.New("the loopback transport must not reach the authenticator")
		})
		c.Authorizer = authorizerFunc(func(a *request.Attributes) (authz.Decision, string, error) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, a.User)
			if a.User.Name == "system:serviceaccount:kube-system:gc" && a.Verb == "list" {
				return authz.DecisionAllow, "", nil
			}
			return authz.DecisionNoOpinion, "", nil
		})
	})
	gc := request.User{Name: "system:serviceaccount:kube-system:gc", Groups: []string{"system:serviceaccounts"}}
	client := kubernetes.NewForConfigOrDie(h.api.LoopbackConfig(gc))
	if _, err := client.CoordinationV1().Leases("default").List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatalf("allowed list: %v", err)
	}
	_, err := client.CoordinationV1().Leases("default").Get(context.Background(), "x", metav1.GetOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "system:serviceaccount:kube-system:gc" cannot get resource "leases"`) {
		t.Fatalf("denied get: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, u := range seen {
		if u.Name != gc.Name || strings.Join(u.Groups, ",") != "system:serviceaccounts,system:authenticated" {
			t.Errorf("authorizer saw %+v", u)
		}
	}
	if len(seen) != 2 {
		t.Errorf("authorizer asked %d times, want 2", len(seen))
	}
}
