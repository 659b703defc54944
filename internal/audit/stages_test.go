package audit

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/leasehold/leasehold/internal/request"
)

func newTestAuditor(t *testing.T, rules string) (*Auditor, *collector) {
	t.Helper()
	sink := &collector{}
	now := time.Date(2026, 1, 2, 3, 4, 5, 600000000, time.UTC)
	return New(Config{Policy: mustPolicy(t, rules), Sink: sink, Now: func() time.Time { return now }}), sink
}

func stages(events []*auditv1.Event) []auditv1.Stage {
	var out []auditv1.Stage
	for _, e := range events {
		out = append(out, e.Stage)
	}
	return out
}

func leaseRecord(verb string) request.Record {
	return request.Record{Attributes: request.Attributes{User: nodeUser, ResourceRequest: true, Verb: verb,
		APIGroup: "coordination.k8s.io", APIVersion: "v1", Namespace: "kube-node-lease", Resource: "leases", Name: "n1"},
		AuditID: "id-1", Received: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func TestStages(t *testing.T) {
	a, sink := newTestAuditor(t, "rules:\n- level: Metadata\n")
	rec := leaseRecord("get")
	r := httptest.NewRequest("GET", leaseURI, nil)
	q := a.Begin(r, &rec)
	if got := stages(sink.events); !slices.Equal(got, []auditv1.Stage{auditv1.StageRequestReceived}) {
		t.Fatalf("after Begin: stages %v", got)
	}
	first := sink.events[0]
	if !first.StageTimestamp.Equal(&first.RequestReceivedTimestamp) || first.ResponseStatus != nil || first.Annotations != nil {
		t.Errorf("RequestReceived event: stageTimestamp %v (received %v), status %v, annotations %v",
			first.StageTimestamp, first.RequestReceivedTimestamp, first.ResponseStatus, first.Annotations)
	}
	q.ResponseStarted(200) // not long-running: ignored
	rec.Decision, rec.Code = "allow", 200
	q.End(&rec)
	q.End(&rec) // idempotent
	if got := stages(sink.events); !slices.Equal(got, []auditv1.Stage{auditv1.StageRequestReceived, auditv1.StageResponseComplete}) {
		t.Fatalf("stages %v", got)
	}
	if first.Annotations != nil {
		t.Error("a later stage changed the event already handed to the sink")
	}
	last := sink.events[1]
	if last.ResponseStatus.Code != 200 || last.ResponseStatus.Status != "" || last.Annotations[DecisionAnnotation] != "allow" {
		t.Errorf("ResponseComplete: status %+v annotations %v", last.ResponseStatus, last.Annotations)
	}
}

func TestWatchStages(t *testing.T) {
	a, sink := newTestAuditor(t, "rules:\n- level: Metadata\n  omitStages: [RequestReceived]\n")
	rec := leaseRecord("watch")
	q := a.Begin(httptest.NewRequest("GET", leaseURI+"?watch=true", nil), &rec)
	q.ResponseStarted(200)
	q.ResponseStarted(200)
	rec.Decision, rec.Code = "allow", 200
	q.End(&rec)
	if got := stages(sink.events); !slices.Equal(got, []auditv1.Stage{auditv1.StageResponseStarted, auditv1.StageResponseComplete}) {
		t.Fatalf("stages %v", got)
	}
	// A watch whose client left before the headers: faked success, both stages.
	a, sink = newTestAuditor(t, "rules:\n- level: Metadata\n  omitStages: [RequestReceived]\n")
	rec = leaseRecord("watch")
	a.Begin(httptest.NewRequest("GET", leaseURI+"?watch=true", nil), &rec).End(&rec)
	if got := stages(sink.events); !slices.Equal(got, []auditv1.Stage{auditv1.StageResponseStarted, auditv1.StageResponseComplete}) {
		t.Fatalf("closed early: stages %v", got)
	}
	if s := sink.events[1].ResponseStatus; s.Code != 200 || s.Message != "Connection closed early" || s.Status != metav1.StatusSuccess {
		t.Errorf("closed early: status %+v", s)
	}
}

func TestPanicStage(t *testing.T) {
	a, sink := newTestAuditor(t, "rules:\n- level: Metadata\n  omitStages: [RequestReceived]\n")
	rec := leaseRecord("update")
	q := a.Begin(httptest.NewRequest("PUT", leaseURI, nil), &rec)
	rec.Decision = "allow"
	q.Panic(&rec, "boom")
	q.End(&rec)
	if got := stages(sink.events); !slices.Equal(got, []auditv1.Stage{auditv1.StagePanic}) {
		t.Fatalf("stages %v", got)
	}
	s := sink.events[0].ResponseStatus
	if s.Code != 500 || s.Reason != metav1.StatusReasonInternalError || s.Message != "APIServer panic'd: boom" {
		t.Errorf("status %+v", s)
	}
}

func TestFailedAuthentication(t *testing.T) {
	a, sink := newTestAuditor(t, "rules:\n- level: Metadata\n")
	cases := []struct {
		name    string
		prepare func(r *http.Request)
		want    string
	}{
		{"nothing", func(*http.Request) {}, "Authentication failed, no credentials provided"},
		{"bearer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer abc") }, "Authentication failed, attempted: bearer"},
		{"basic and x509", func(r *http.Request) {
			r.SetBasicAuth("u", "p")
			r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{{}}}
		}, "Authentication failed, attempted: basic, x509"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sink.events = nil
			r := httptest.NewRequest("GET", leaseURI, nil)
			c.prepare(r)
			rec := leaseRecord("get")
			rec.User = request.User{}
			q := a.BeginFailedAuthentication(r, &rec)
			rec.Code = 401
			q.End(&rec)
			if got := stages(sink.events); !slices.Equal(got, []auditv1.Stage{auditv1.StageResponseStarted}) {
				t.Fatalf("stages %v, want only ResponseStarted", got)
			}
			ev := sink.events[0]
			if ev.ResponseStatus.Code != 401 || ev.ResponseStatus.Message != c.want || ev.User.Username != "" || ev.Annotations != nil {
				t.Errorf("status %+v user %+v annotations %v", ev.ResponseStatus, ev.User, ev.Annotations)
			}
		})
	}
}

func TestForbiddenAnnotations(t *testing.T) {
	a, sink := newTestAuditor(t, "rules:\n- level: Metadata\n  omitStages: [RequestReceived]\n")
	rec := leaseRecord("delete")
	q := a.Begin(httptest.NewRequest("DELETE", leaseURI, nil), &rec)
	rec.Decision, rec.Reason, rec.Code = "forbid", "", 403
	q.LogResponseObject(&metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonForbidden, Code: 403,
		Message: `leases.coordination.k8s.io "n1" is forbidden: User "system:node:x" cannot delete resource "leases"`})
	q.End(&rec)
	ev := sink.events[0]
	if ev.Annotations[DecisionAnnotation] != "forbid" || ev.Annotations[ReasonAnnotation] != "" || len(ev.Annotations) != 2 {
		t.Errorf("annotations %v", ev.Annotations)
	}
	if ev.ResponseStatus.Code != 403 || ev.ResponseStatus.Reason != metav1.StatusReasonForbidden || ev.ResponseObject != nil {
		t.Errorf("status %+v responseObject %v", ev.ResponseStatus, ev.ResponseObject)
	}
	// An authorizer error: only the reason.
	sink.events = nil
	rec = leaseRecord("delete")
	q = a.Begin(httptest.NewRequest("DELETE", leaseURI, nil), &rec)
	rec.Reason, rec.Code = "internal error", 500
	q.End(&rec)
	if got := sink.events[0].Annotations; len(got) != 1 || got[ReasonAnnotation] != "internal error" {
		t.Errorf("authorizer error: annotations %v", got)
	}
}

func TestBodiesByLevel(t *testing.T) {
	lease := &coordinationv1.Lease{TypeMeta: metav1.TypeMeta{Kind: "Lease", APIVersion: "coordination.k8s.io/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "kube-node-lease", UID: "u1", ResourceVersion: "7",
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}}}
	cases := []struct {
		level                string
		omitManaged          bool
		wantReq, wantResp    bool
		wantManagedInRequest bool
	}{
		{"Metadata", false, false, false, false},
		{"Request", false, true, false, true},
		{"RequestResponse", false, true, true, true},
		{"RequestResponse", true, true, true, false},
	}
	for _, c := range cases {
		omit := ""
		if c.omitManaged {
			omit = "  omitManagedFields: true\n"
		}
		a, sink := newTestAuditor(t, "rules:\n- level: "+c.level+"\n  omitStages: [RequestReceived]\n"+omit)
		rec := leaseRecord("update")
		q := a.Begin(httptest.NewRequest("PUT", leaseURI, nil), &rec)
		if q.Level() != auditv1.Level(c.level) {
			t.Errorf("Level() = %q", q.Level())
		}
		q.LogRequestObject(lease)
		q.LogResponseObject(lease)
		rec.Code = 200
		q.End(&rec)
		ev := sink.events[0]
		if (ev.RequestObject != nil) != c.wantReq || (ev.ResponseObject != nil) != c.wantResp {
			t.Errorf("%s: requestObject %v responseObject %v", c.level, ev.RequestObject != nil, ev.ResponseObject != nil)
		}
		if ev.ObjectRef.UID != "u1" || ev.ObjectRef.ResourceVersion != "7" {
			t.Errorf("%s: objectRef %+v, want uid and resourceVersion from the request object", c.level, ev.ObjectRef)
		}
		if ev.RequestObject != nil && strings.Contains(string(ev.RequestObject.Raw), "managedFields") != c.wantManagedInRequest {
			t.Errorf("%s omitManagedFields=%v: requestObject %s", c.level, c.omitManaged, ev.RequestObject.Raw)
		}
		if len(lease.ManagedFields) != 1 {
			t.Fatal("omitting managed fields changed the caller's object")
		}
	}
}

func TestPatchBodyIsRaw(t *testing.T) {
	a, sink := newTestAuditor(t, "rules:\n- level: Request\n  omitStages: [RequestReceived]\n")
	rec := leaseRecord("patch")
	q := a.Begin(httptest.NewRequest("PATCH", leaseURI, nil), &rec)
	patch := []byte(`{"spec":{"renewTime":"2026-01-02T03:04:05.000000Z"}}`)
	q.LogRequestPatch(patch)
	patch[2] = 'X'
	rec.Code = 200
	q.End(&rec)
	if got := string(sink.events[0].RequestObject.Raw); got != `{"spec":{"renewTime":"2026-01-02T03:04:05.000000Z"}}` {
		t.Errorf("requestObject %s", got)
	}
}

func TestNonResourceRequestsHaveNoBodies(t *testing.T) {
	a, sink := newTestAuditor(t, "rules:\n- level: RequestResponse\n  omitStages: [RequestReceived]\n")
	rec := request.Record{Attributes: request.Attributes{User: adminUser, Path: "/metrics", Verb: "get"}, AuditID: "x"}
	q := a.Begin(httptest.NewRequest("GET", "/metrics", nil), &rec)
	q.LogRequestPatch([]byte(`{}`))
	q.LogResponseObject(&metav1.Status{Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden})
	rec.Code = 403
	q.End(&rec)
	ev := sink.events[0]
	if ev.ObjectRef != nil || ev.RequestObject != nil || ev.ResponseObject != nil || ev.ResponseStatus.Reason != metav1.StatusReasonForbidden {
		t.Errorf("non-resource event %+v", ev)
	}
}

func TestRequestMetadata(t *testing.T) {
	a, sink := newTestAuditor(t, "rules:\n- level: Metadata\n  omitStages: [RequestReceived]\n")
	r := httptest.NewRequest("GET", leaseURI+"?timeout=10s", nil)
	r.RemoteAddr = "10.0.0.9:5555"
	r.Header.Set("X-Forwarded-For", "1.2.3.4, bogus, 5.6.7.8")
	r.Header.Set("X-Real-Ip", "9.9.9.9")
	r.Header.Set("User-Agent", strings.Repeat("a", 1100))
	rec := leaseRecord("get")
	q := a.Begin(r, &rec)
	q.SetImpersonatedUser(request.User{Name: "bob", Groups: []string{"g"}})
	q.AddAnnotation("k", "v1")
	q.AddAnnotation("k", "v2")
	rec.Code = 200
	q.End(&rec)
	ev := sink.events[0]
	if !slices.Equal(ev.SourceIPs, []string{"1.2.3.4", "5.6.7.8", "9.9.9.9", "10.0.0.9"}) {
		t.Errorf("sourceIPs %v", ev.SourceIPs)
	}
	if len(ev.UserAgent) != 1024+len("...TRUNCATED") || !strings.HasSuffix(ev.UserAgent, "...TRUNCATED") {
		t.Errorf("userAgent of %d bytes", len(ev.UserAgent))
	}
	if ev.ImpersonatedUser == nil || ev.ImpersonatedUser.Username != "bob" || ev.Annotations["k"] != "v1" {
		t.Errorf("impersonatedUser %+v annotations %v", ev.ImpersonatedUser, ev.Annotations)
	}
	if ev.RequestURI != leaseURI+"?timeout=10s" || ev.Verb != "get" || ev.AuditID != "id-1" || ev.ObjectRef.Namespace != "kube-node-lease" {
		t.Errorf("event %+v", ev)
	}
}

func TestLevelNoneIsNil(t *testing.T) {
	a, sink := newTestAuditor(t, "rules:\n- level: None\n")
	rec := leaseRecord("update")
	q := a.Begin(httptest.NewRequest("PUT", leaseURI, nil), &rec)
	if q != nil {
		t.Fatal("Begin returned a Request for level None")
	}
	// Every method is safe on nil.
	q.LogRequestObject(&coordinationv1.Lease{})
	q.LogRequestPatch(nil)
	q.LogResponseObject(&metav1.Status{})
	q.AddAnnotation("a", "b")
	q.SetImpersonatedUser(request.User{})
	q.ResponseStarted(200)
	q.End(&rec)
	q.Panic(&rec, "x")
	if q.Level() != auditv1.LevelNone || len(sink.events) != 0 {
		t.Errorf("level %q, %d events", q.Level(), len(sink.events))
	}
}

func TestRequestInContext(t *testing.T) {
	a, _ := newTestAuditor(t, "rules:\n- level: Metadata\n")
	rec := leaseRecord("get")
	q := a.Begin(httptest.NewRequest("GET", leaseURI, nil), &rec)
	ctx := WithRequest(context.Background(), q)
	if RequestFrom(ctx) != q {
		t.Error("RequestFrom did not return the Request")
	}
	if ctx := WithRequest(context.Background(), nil); RequestFrom(ctx) != nil {
		t.Error("a nil Request came back non-nil")
	}
}
