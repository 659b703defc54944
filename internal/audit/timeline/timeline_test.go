package timeline

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/audit"
	"github.com/leasehold/leasehold/internal/audit/logbackend"
	"github.com/leasehold/leasehold/internal/request"
)

var update = flag.Bool("update", false, "rewrite the golden timelines in testdata")

const (
	node     = "ip-10-29-79-205.ap-northeast-2.compute.internal"
	gcReason = `RBAC: allowed by ClusterRoleBinding "system:controller:generic-garbage-collector" of ClusterRole "system:controller:generic-garbage-collector" to ServiceAccount "generic-garbage-collector/kube-system"`
)

// seedClusterPolicy logs like the seed's cluster: node deletions with
// bodies, everything else at Metadata.
const seedClusterPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: RequestResponse
  verbs: [delete]
  resources: [{group: "", resources: [nodes]}]
- level: Metadata
`

var (
	admin = request.User{Name: "kubernetes-admin", Groups: []string{"system:masters", "system:authenticated"}}
	gc    = request.User{Name: "system:serviceaccount:kube-system:generic-garbage-collector",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}}
	nodeUser = request.User{Name: "system:node:" + node, Groups: []string{"system:bootstrappers", "system:nodes", "system:authenticated"}}
)

// step is one request of the incident.
type step struct {
	at               string
	user             request.User
	method, uri      string
	verb, resource   string
	name             string
	reason           string
	code             int
	status           *metav1.Status
	took             time.Duration
	requestObject    *metav1.DeleteOptions
	clusterScopedRes bool
}

// incident is the seed's story: the admin deletes the node, the garbage
// collector deletes its lease, the node's kubelet keeps getting its lease
// and is answered 404, then the kubelet restarts, registers the node again,
// creates its lease and renews it.
func incident() []step {
	const leases = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
	background := metav1.DeletePropagationBackground
	notFound := &metav1.Status{Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: 404,
		Message: `leases.coordination.k8s.io "` + node + `" not found`}
	steps := []step{
		{at: "2024-04-05T05:58:52.744075Z", user: admin, method: "DELETE", uri: "/api/v1/nodes/" + node, verb: "delete",
			resource: "nodes", name: node, code: 200, took: 15130 * time.Microsecond, clusterScopedRes: true,
			requestObject: &metav1.DeleteOptions{TypeMeta: metav1.TypeMeta{Kind: "DeleteOptions", APIVersion: "meta.k8s.io/__internal"}, PropagationPolicy: &background},
			status:        &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Details: &metav1.StatusDetails{Name: node, Kind: "nodes"}}},
		{at: "2024-04-05T05:58:52.774196Z", user: gc, method: "DELETE", uri: leases + "/" + node, verb: "delete",
			resource: "leases", name: node, reason: gcReason, code: 200, took: 18559 * time.Microsecond},
	}
	for i := range 6 {
		t := time.Date(2024, 4, 5, 6, 4, 14, 665138000, time.UTC).Add(time.Duration(i) * 10 * time.Second)
		steps = append(steps, step{at: t.Format(time.RFC3339Nano), user: nodeUser, method: "GET", uri: leases + "/" + node + "?timeout=10s",
			verb: "get", resource: "leases", name: node, code: 404, status: notFound, took: 3684 * time.Microsecond})
	}
	return append(steps,
		step{at: "2024-04-05T09:38:34.101200Z", user: nodeUser, method: "POST", uri: "/api/v1/nodes", verb: "create",
			resource: "nodes", name: node, code: 201, took: 20 * time.Millisecond, clusterScopedRes: true},
		step{at: "2024-04-05T09:38:34.242033Z", user: nodeUser, method: "POST", uri: leases + "?timeout=10s", verb: "create",
			resource: "leases", name: node, code: 201, took: 23330 * time.Microsecond},
		step{at: "2024-04-05T09:38:44.265363Z", user: nodeUser, method: "PUT", uri: leases + "/" + node + "?timeout=10s", verb: "update",
			resource: "leases", name: node, code: 200, took: 6 * time.Millisecond},
	)
}

// writeIncident audits the incident under policyText into a log at dir
// that rotates every megabyte with compression, with other nodes'
// renewals between the steps, so the incident spans compressed, rotated
// and current files.
func writeIncident(t *testing.T, dir, policyText string) string {
	t.Helper()
	policy, _, err := audit.ParsePolicy([]byte(policyText))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "audit.log")
	// The clock is read by the backend's Run goroutine too (housekeeping).
	var (
		mu  sync.Mutex
		now time.Time
	)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	setNow := func(t time.Time) { mu.Lock(); defer mu.Unlock(); now = t }
	b, err := logbackend.New(logbackend.Options{Path: path, MaxSizeMB: 1, Compress: true, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.Run(ctx) }()
	a := audit.New(audit.Config{Policy: policy, Sink: b, Now: clock})
	for i, s := range incident() {
		received, err := time.Parse(time.RFC3339Nano, s.at)
		if err != nil {
			t.Fatal(err)
		}
		// Other nodes renew meanwhile: about a megabyte between steps.
		for k := range 300 {
			setNow(received.Add(-time.Duration(300-k) * time.Millisecond))
			other := fmt.Sprintf("node-%d", k)
			run(a, clock(), request.User{Name: "system:node:" + other, Groups: []string{"system:nodes"}}, "PUT",
				"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/"+other, "update", "leases", other, "", 200, nil, nil, false,
				fmt.Sprintf("%s-filler-%d", s.at, k), 1000)
		}
		setNow(received.Add(s.took))
		run(a, received, s.user, s.method, s.uri, s.verb, s.resource, s.name, s.reason, s.code, s.status, s.requestObject,
			s.clusterScopedRes, fmt.Sprintf("incident-%d", i), 0)
	}
	cancel()
	<-done
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// run audits one request as the pipeline does.
func run(a *audit.Auditor, received time.Time, u request.User, method, uri, verb, resource, name, reason string, code int,
	status *metav1.Status, reqObj *metav1.DeleteOptions, clusterScoped bool, id string, pad int) {
	attrs := request.Attributes{User: u, ResourceRequest: true, Verb: verb, APIVersion: "v1", Resource: resource, Name: name}
	if !clusterScoped {
		attrs.APIGroup, attrs.Namespace = "coordination.k8s.io", "kube-node-lease"
	}
	if verb == "create" {
		attrs.Name = ""
	}
	rec := request.Record{Attributes: attrs, AuditID: id, Received: received}
	r := httptest.NewRequest(method, uri, nil)
	r.Header.Set("User-Agent", "test")
	q := a.Begin(r, &rec)
	rec.Decision, rec.Reason = "allow", reason
	if reqObj != nil {
		q.LogRequestObject(reqObj)
	}
	if verb == "create" {
		q.LogRequestObject(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	if pad > 0 {
		q.AddAnnotation("pad", string(bytes.Repeat([]byte("x"), pad)))
	}
	if status != nil {
		q.LogResponseObject(status)
	}
	rec.Code = code
	q.End(&rec)
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (go test -update to accept):\n%s", name, got)
	}
}

func TestIncidentTimeline(t *testing.T) {
	dir := t.TempDir()
	path := writeIncident(t, dir, seedClusterPolicy)
	files, err := Files(path)
	if err != nil {
		t.Fatal(err)
	}
	compressed := 0
	for _, f := range files {
		if filepath.Ext(f) == ".gz" {
			compressed++
		}
	}
	if len(files) < 4 || compressed == 0 {
		t.Fatalf("files %v: want rotated, compressed ones", files)
	}
	for _, arg := range []string{"nodes/" + node, "leases/kube-node-lease/" + node} {
		obj, err := ParseObject(arg)
		if err != nil {
			t.Fatal(err)
		}
		// A node and its lease tell one story: the same timeline.
		golden(t, "incident.txt", textTimeline(t, path, obj))
	}
}

// textTimeline reads obj's whole timeline from the log at path, as text.
func textTimeline(t *testing.T, path string, obj Object) []byte {
	t.Helper()
	res, err := Read(path, obj, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped != 0 {
		t.Errorf("%d lines skipped", res.Skipped)
	}
	var out bytes.Buffer
	if err := WriteText(&out, obj, res.Entries); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func TestIncidentUnderDefaultPolicy(t *testing.T) {
	path := writeIncident(t, t.TempDir(), audit.DefaultPolicyYAML())
	// Renewals are left out; the node's 404 gets of its deleted lease stay.
	golden(t, "incident-default-policy.txt", textTimeline(t, path, Object{Resource: "nodes", Name: node}))
}

func TestFilters(t *testing.T) {
	path := writeIncident(t, t.TempDir(), seedClusterPolicy)
	obj := Object{Resource: "leases", Namespace: "kube-node-lease", Name: node}
	at := func(s string) time.Time { tm, _ := time.Parse(time.RFC3339Nano, s); return tm }
	cases := []struct {
		name   string
		filter Filter
		want   int
	}{
		{"all", Filter{}, 11},
		{"user", Filter{User: gc.Name}, 1},
		{"verb", Filter{Verb: "get"}, 6},
		{"code", Filter{Code: 404}, 6},
		{"since", Filter{Since: at("2024-04-05T09:00:00Z")}, 3},
		{"until", Filter{Until: at("2024-04-05T05:58:52.774196Z")}, 2},
		{"window and verb", Filter{Since: at("2024-04-05T06:04:20Z"), Until: at("2024-04-05T06:04:40Z"), Verb: "get"}, 2},
		{"nothing", Filter{User: "nobody"}, 0},
	}
	for _, c := range cases {
		res, err := Read(path, obj, c.filter)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Entries) != c.want {
			t.Errorf("%s: %d entries, want %d", c.name, len(res.Entries), c.want)
		}
	}
	res, err := Read(path, obj, Filter{User: gc.Name})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteJSON(&out, res.Entries); err != nil {
		t.Fatal(err)
	}
	var decoded []Entry
	if err := json.Unmarshal(out.Bytes(), &decoded); err != nil || len(decoded) != 1 || decoded[0].Reason != gcReason ||
		decoded[0].Code != 200 || decoded[0].Verb != "delete" || decoded[0].AuditID != "incident-1" {
		t.Errorf("JSON %s (%v)", out.Bytes(), err)
	}
}

func TestParseObjectAndTime(t *testing.T) {
	for _, bad := range []string{"nodes", "nodes/", "/a/b", "a/b/c/d"} {
		if _, err := ParseObject(bad); err == nil {
			t.Errorf("ParseObject(%q) accepted", bad)
		}
	}
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	if got, err := ParseTime("90m", now); err != nil || !got.Equal(now.Add(-90*time.Minute)) {
		t.Errorf("ParseTime(90m) = %v, %v", got, err)
	}
	if got, err := ParseTime("2024-04-05T05:58:52Z", now); err != nil || got.Unix() != 1712296732 {
		t.Errorf("ParseTime(RFC3339) = %v, %v", got, err)
	}
	if _, err := ParseTime("yesterday", now); err == nil {
		t.Error("ParseTime(yesterday) accepted")
	}
}
