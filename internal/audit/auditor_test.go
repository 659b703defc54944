package audit

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/leasehold/leasehold/internal/request"
)

// collector is a Sink keeping what it gets.
type collector struct {
	mu     sync.Mutex
	events []*auditv1.Event
}

func (c *collector) ProcessEvents(events ...*auditv1.Event) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events = append(c.events, events...)
	return true
}

// seedPolicy is a policy like the one the seed's cluster ran: bodies for
// node deletions, metadata for everything else, RequestReceived omitted.
const seedPolicy = policyHeader + `omitStages: [RequestReceived]
rules:
- level: RequestResponse
  verbs: [delete]
  resources: [{group: "", resources: [nodes]}]
- level: Metadata
`

const (
	node     = "ip-10-29-79-205.ap-northeast-2.compute.internal"
	leaseURI = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/" + node
	gcReason = `RBAC: allowed by ClusterRoleBinding "system:controller:generic-garbage-collector" of ClusterRole "system:controller:generic-garbage-collector" to ServiceAccount "generic-garbage-collector/kube-system"`
)

var (
	adminUser = request.User{Name: "kubernetes-admin", UID: "aws-iam-authenticator:0430********:AIDAQUA5FHPOFECTQ53HX",
		Groups: []string{"system:masters", "system:authenticated"},
		Extra: map[string][]string{"accessKeyId": {"AKIA************LOER"}, "arn": {"arn:aws:iam::0430********:user/terraform"},
			"canonicalArn": {"arn:aws:iam::0430********:user/terraform"}, "principalId": {"AIDAQUA5FHPOFECTQ53HX"}, "sessionName": {""}}}
	gcUser = request.User{Name: "system:serviceaccount:kube-system:generic-garbage-collector", UID: "cb6aff72-484e-4904-9b23-2b1ae737574e",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}}
	nodeUser = nodeWithKey("ASIA********EOHO")
)

// nodeWithKey is the node's user with the given temporary access key (one
// per credential refresh in the seed).
func nodeWithKey(key string) request.User {
	return request.User{Name: "system:node:" + node, UID: "aws-iam-authenticator:0430********:AROAQUA5FHPODRA52EIMH",
		Groups: []string{"system:bootstrappers", "system:nodes", "system:authenticated"},
		Extra: map[string][]string{"accessKeyId": {key}, "arn": {"arn:aws:sts::0430********:assumed-role/ToyBox-1-29-EKSNodeGroupRole/i-04ccfd26e5c668ef8"},
			"canonicalArn": {"arn:aws:iam::0430********:role/ToyBox-1-29-EKSNodeGroupRole"}, "principalId": {"AROAQUA5FHPODRA52EIMH"}, "sessionName": {"i-04ccfd26e5c668ef8"}}}
}

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

// seedRequest is one request of the seed's incident as the pipeline would
// see it, and what its handler logs.
type seedRequest struct {
	method, uri, remote, userAgent string
	rec                            request.Record
	requestObject                  runtime.Object
	responseObject                 runtime.Object
	done                           time.Time
}

// run audits one request the way the pipeline does, and returns its events.
func (s seedRequest) run(t *testing.T, policy *Policy) []*auditv1.Event {
	t.Helper()
	sink := &collector{}
	a := New(Config{Policy: policy, Sink: sink, Now: func() time.Time { return s.done }})
	r := httptest.NewRequest(s.method, s.uri, nil)
	r.RemoteAddr = s.remote
	r.Header.Set("User-Agent", s.userAgent)
	rec := s.rec
	code, decision, reason := rec.Code, rec.Decision, rec.Reason
	rec.Code, rec.Decision, rec.Reason = 0, "", ""
	q := a.Begin(r, &rec) // after authentication, before authorization
	rec.Decision, rec.Reason = decision, reason
	q.LogRequestObject(s.requestObject)
	q.LogResponseObject(s.responseObject)
	rec.Code = code
	q.End(&rec)
	return sink.events
}

// seedIncident is the seed's incident: the admin deletes the node, the
// garbage collector deletes its lease, the node's get of the lease is
// answered 404, the node re-creates its lease and renews it.
func seedIncident() map[string]seedRequest {
	nodeStatus := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess,
		Details: &metav1.StatusDetails{Name: node, Kind: "nodes", UID: "17528ac7-96fb-4ff3-9be6-c16aa5f6622d"}}
	notFound := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Message: `leases.coordination.k8s.io "` + node + `" not found`, Reason: metav1.StatusReasonNotFound,
		Details: &metav1.StatusDetails{Name: node, Group: "coordination.k8s.io", Kind: "leases"}, Code: 404}
	leaseStatus := &metav1.Status{Status: metav1.StatusSuccess,
		Details: &metav1.StatusDetails{Name: node, Group: "coordination.k8s.io", Kind: "leases", UID: "bd723e95-a78f-4686-8881-13bd46a816cb"}}
	background := metav1.DeletePropagationBackground
	leaseAttrs := func(u request.User, verb, name string) request.Attributes {
		return request.Attributes{User: u, ResourceRequest: true, Verb: verb, APIGroup: "coordination.k8s.io", APIVersion: "v1",
			Namespace: "kube-node-lease", Resource: "leases", Name: name}
	}
	const kubelet = "kubelet/v1.29.0 (linux/amd64) kubernetes/3034fd4"
	return map[string]seedRequest{
		"node-delete": {method: "DELETE", uri: "/api/v1/nodes/" + node, remote: "221.154.70.216:51234",
			userAgent: "kubectl/v1.29.2 (darwin/arm64) kubernetes/4b8e819",
			rec: request.Record{Attributes: request.Attributes{User: adminUser, ResourceRequest: true, Verb: "delete", APIVersion: "v1",
				Resource: "nodes", Name: node}, AuditID: "e6d4bc1f-063b-4572-80ca-018ceb7743d2",
				Received: ts("2024-04-05T05:58:52.744075Z"), Decision: "allow", Code: 200},
			// kube-apiserver logs a delete's options in its internal
			// version; the pipeline passes them with that apiVersion.
			requestObject: &metav1.DeleteOptions{TypeMeta: metav1.TypeMeta{Kind: "DeleteOptions", APIVersion: "meta.k8s.io/__internal"},
				PropagationPolicy: &background},
			responseObject: nodeStatus, done: ts("2024-04-05T05:58:52.759205Z")},
		"lease-delete": {method: "DELETE", uri: leaseURI, remote: "172.16.49.75:40000",
			userAgent: "kube-controller-manager/v1.29.1 (linux/amd64) kubernetes/07600c7/system:serviceaccount:kube-system:generic-garbage-collector",
			rec: request.Record{Attributes: leaseAttrs(gcUser, "delete", node), AuditID: "baacc4d1-b4ed-4790-8b14-0a232aa4f1b2",
				Received: ts("2024-04-05T05:58:52.774196Z"), Decision: "allow", Reason: gcReason, Code: 200},
			responseObject: leaseStatus, done: ts("2024-04-05T05:58:52.792755Z")},
		"lease-get-404": {method: "GET", uri: leaseURI + "?timeout=10s", remote: "10.29.79.205:10250", userAgent: kubelet,
			rec: request.Record{Attributes: leaseAttrs(nodeUser, "get", node), AuditID: "8bf8dca8-3fa4-4286-9469-6c5bfb32193e",
				Received: ts("2024-04-05T06:04:14.665138Z"), Decision: "allow", Code: 404},
			responseObject: notFound, done: ts("2024-04-05T06:04:14.668822Z")},
		"lease-create": {method: "POST", uri: "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases?timeout=10s",
			remote: "10.29.79.205:10250", userAgent: kubelet,
			rec: request.Record{Attributes: leaseAttrs(nodeWithKey("ASIA************G2HA"), "create", ""), AuditID: "33a800c7-1d7c-4882-b42b-73ea4893892a",
				Received: ts("2024-04-05T09:38:34.242033Z"), Decision: "allow", Code: 201},
			requestObject: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: "kube-node-lease"}},
			done:          ts("2024-04-05T09:38:34.265363Z")},
		"lease-update": {method: "PUT", uri: leaseURI + "?timeout=10s", remote: "10.29.79.205:10250", userAgent: kubelet,
			rec: request.Record{Attributes: leaseAttrs(nodeWithKey("ASIA************CTFF"), "update", node), AuditID: "550cfc75-64d3-4096-bc88-a645b983d561",
				Received: ts("2024-04-05T06:26:01.081550Z"), Decision: "allow", Code: 200},
			requestObject: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: "kube-node-lease",
				UID: "f41aaee7-ebab-49cb-844f-0a1ab5ae43fe", ResourceVersion: "308422"}},
			done: ts("2024-04-05T06:26:01.087545Z")},
	}
}

// TestSeedEvents checks that the seed's five audit events come out field
// for field as kube-apiserver wrote them.
func TestSeedEvents(t *testing.T) {
	policy := mustPolicy(t, strings.TrimPrefix(seedPolicy, policyHeader))
	for name, req := range seedIncident() {
		t.Run(name, func(t *testing.T) {
			events := req.run(t, policy)
			if len(events) != 1 {
				t.Fatalf("%d events, want 1 (ResponseComplete; RequestReceived omitted)", len(events))
			}
			got, err := json.Marshal(events[0])
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile("testdata/seed-" + name + ".json")
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("event differs from the seed's\n got: %s\nwant: %s", got, want)
			}
		})
	}
}
