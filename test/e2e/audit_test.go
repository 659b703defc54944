package e2e

// The audit trail of the first seed's incident, from a real server, agent
// and kubectl: the admin deletes a Node, the garbage collector deletes its
// lease, the running agent's get of its lease is answered 404, and the
// restarted agent registers again and re-creates the lease. The events
// must carry the seed's fields (level, stage, user, objectRef, bodies,
// responseStatus, the authorization annotations), and `leasehold audit`
// must tell the story as one timeline.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/leasehold/leasehold/internal/testdeps"
	"github.com/leasehold/leasehold/internal/testdeps/nodeenv"
)

func TestAuditTrailOfNodeDeletion(t *testing.T) {
	t.Parallel()
	logPath := filepath.Join(t.TempDir(), "audit.log")
	// The shipped default policy: node renewals left out, deletions of
	// nodes and leases at RequestResponse, the rest at Metadata.
	c := newNodeCluster(t, append([]string{"--audit-log-path", logPath}, fastServerArgs...)...)
	names := nodeenv.Names("audit", 2)
	name, other := names[0], names[1]
	agents := c.startAgents(names, fastAgentArgs...)
	agent := agents[0]
	node, lease := c.WaitRegistered(name, fastSlack, fastRenew+fastSlack)
	c.WaitReady(other, fastSlack)
	c.waitNodeEvent(name, "RegisteredNode", fmt.Sprintf("Node %s event: Registered Node %s in Controller", name, name), fastSlack)

	mark := agent.Mark()
	c.kubectl.run("delete", "node", name)
	c.WaitLeaseGone(name, fastSlack)
	agent.WaitLine(mark, fastRenew+fastSlack, `msg="Failed to get node when trying to set owner ref to the node lease"`)
	agent.Stop()
	agent.Restart()
	c.WaitRegistered(name, fastSlack, fastRenew+fastSlack)

	// A denial and a failed authentication, each answered with an Audit-ID
	// the log must hold.
	sc := &secCluster{t: t, srv: c.srv, dir: t.TempDir()}
	asNode := sc.callerFromKubeconfig("node", nodeCredentials(t, c.srv, name))
	forbidID := asNode.auditID(http.MethodDelete, leasePath("kube-node-lease", other), http.StatusForbidden)
	badToken := sc.callerWithToken("bad token", "not-a-token")
	unauthID := badToken.auditID(http.MethodGet, "/api/v1/nodes", http.StatusUnauthorized)

	// Blocking mode (the default) wrote each event before its response;
	// stopping the server also closes the file.
	c.srv.Stop()
	events := readAuditLog(t, logPath)

	// 1. The admin's node deletion, at RequestResponse with its
	// DeleteOptions body, as the seed's first event.
	del := findEvent(t, events, "the admin's delete node", func(e *auditv1.Event) bool {
		return e.Verb == "delete" && e.ObjectRef != nil && e.ObjectRef.Resource == "nodes" && e.ObjectRef.Name == name
	})
	checkEvent(t, "delete node", del, auditv1.LevelRequestResponse, http.StatusOK)
	if !slices.Contains(del.User.Groups, "system:masters") {
		t.Errorf("delete node by %+v, want the admin (system:masters)", del.User)
	}
	if del.ObjectRef.APIVersion != "v1" || del.ObjectRef.APIGroup != "" || del.RequestURI != "/api/v1/nodes/"+name {
		t.Errorf("delete node objectRef %+v, requestURI %q", del.ObjectRef, del.RequestURI)
	}
	var opts map[string]any
	if del.RequestObject == nil || json.Unmarshal(del.RequestObject.Raw, &opts) != nil ||
		opts["kind"] != "DeleteOptions" || opts["apiVersion"] != "meta.k8s.io/__internal" || opts["propagationPolicy"] != "Background" {
		t.Errorf("delete node requestObject = %s, want the seed's DeleteOptions (meta.k8s.io/__internal, Background)", raw(del.RequestObject))
	}
	var st metav1.Status
	if del.ResponseObject == nil || json.Unmarshal(del.ResponseObject.Raw, &st) != nil || st.Kind != "Status" ||
		st.Status != metav1.StatusSuccess || st.Details == nil || st.Details.Kind != "nodes" || st.Details.UID != node.UID {
		t.Errorf("delete node responseObject = %s, want a Success Status naming node uid %s", raw(del.ResponseObject), node.UID)
	}
	if s := del.ResponseStatus; s == nil || s.Status != metav1.StatusSuccess || s.Details == nil || s.Details.Name != name {
		t.Errorf("delete node responseStatus = %+v", s)
	}
	if del.Annotations["authorization.k8s.io/decision"] != "allow" {
		t.Errorf("delete node annotations = %v", del.Annotations)
	}

	// 2. The garbage collector's lease deletion, with the RBAC binding that
	// allowed it.
	gc := findEvent(t, events, "the garbage collector's delete lease", func(e *auditv1.Event) bool {
		return e.Verb == "delete" && e.ObjectRef != nil && e.ObjectRef.Resource == "leases" && e.ObjectRef.Name == name
	})
	checkEvent(t, "delete lease", gc, auditv1.LevelRequestResponse, http.StatusOK)
	if gc.User.Username != "system:serviceaccount:kube-system:generic-garbage-collector" {
		t.Errorf("lease deleted by %q, want the garbage collector", gc.User.Username)
	}
	wantReason := `RBAC: allowed by ClusterRoleBinding "system:controller:generic-garbage-collector" of ClusterRole "system:controller:generic-garbage-collector" to ServiceAccount "generic-garbage-collector/kube-system"`
	if gc.Annotations["authorization.k8s.io/decision"] != "allow" || gc.Annotations["authorization.k8s.io/reason"] != wantReason {
		t.Errorf("delete lease annotations = %v, want allow and\n  %s", gc.Annotations, wantReason)
	}
	if gc.ObjectRef.Namespace != "kube-node-lease" || gc.ObjectRef.APIGroup != "coordination.k8s.io" {
		t.Errorf("delete lease objectRef = %+v", gc.ObjectRef)
	}
	if s := gc.ResponseStatus; s == nil || s.Details == nil || s.Details.UID != lease.UID {
		t.Errorf("delete lease responseStatus = %+v, want the deleted lease's uid %s", s, lease.UID)
	}
	if len(gc.SourceIPs) == 0 || !strings.Contains(gc.UserAgent, "generic-garbage-collector") {
		t.Errorf("delete lease sourceIPs %v, userAgent %q", gc.SourceIPs, gc.UserAgent)
	}

	// 3. The node's get of its deleted lease, answered 404.
	get := findEvent(t, events, "the node's 404 get lease", func(e *auditv1.Event) bool {
		return e.Verb == "get" && e.ObjectRef != nil && e.ObjectRef.Resource == "leases" && e.ObjectRef.Name == name &&
			e.User.Username == "system:node:"+name && e.ResponseStatus != nil && e.ResponseStatus.Code == http.StatusNotFound &&
			e.RequestReceivedTimestamp.After(gc.RequestReceivedTimestamp.Time)
	})
	checkEvent(t, "get lease", get, auditv1.LevelMetadata, http.StatusNotFound)
	if get.User.Username != "system:node:"+name || !slices.Contains(get.User.Groups, "system:nodes") {
		t.Errorf("404 get by %+v, want system:node:%s", get.User, name)
	}
	if s := get.ResponseStatus; s.Reason != metav1.StatusReasonNotFound || s.Message != fmt.Sprintf(`leases.coordination.k8s.io %q not found`, name) {
		t.Errorf("404 get responseStatus = %+v", s)
	}

	// 4. Re-registration: the lease created again by the node.
	findEvent(t, events, "the node's create lease", func(e *auditv1.Event) bool {
		return e.Verb == "create" && e.ObjectRef != nil && e.ObjectRef.Resource == "leases" && e.ObjectRef.Name == name &&
			e.User.Username == "system:node:"+name && e.ResponseStatus != nil && e.ResponseStatus.Code == http.StatusCreated
	})
	// Renewals are left out by the default policy.
	for _, e := range events {
		if e.Verb == "update" && e.ObjectRef != nil && e.ObjectRef.Resource == "leases" && strings.HasPrefix(e.User.Username, "system:node:") {
			t.Errorf("a node lease renewal was logged under the default policy: %s", e.RequestURI)
			break
		}
	}

	// 5. The 403, with decision forbid and the node authorizer's reason.
	forbid := findEvent(t, events, "the 403", func(e *auditv1.Event) bool { return string(e.AuditID) == forbidID })
	checkEvent(t, "403", forbid, auditv1.LevelRequestResponse, http.StatusForbidden)
	if forbid.Annotations["authorization.k8s.io/decision"] != "forbid" || forbid.Annotations["authorization.k8s.io/reason"] == "" {
		t.Errorf("403 annotations = %v, want forbid with a reason", forbid.Annotations)
	}
	if s := forbid.ResponseStatus; s.Reason != metav1.StatusReasonForbidden {
		t.Errorf("403 responseStatus = %+v", s)
	}

	// 6. The 401, as kube-apiserver audits failed authentication: one
	// ResponseStarted event naming the credentials tried, no user.
	unauth := findEvent(t, events, "the 401", func(e *auditv1.Event) bool { return string(e.AuditID) == unauthID })
	if unauth.Stage != auditv1.StageResponseStarted || unauth.ResponseStatus == nil || unauth.ResponseStatus.Code != http.StatusUnauthorized ||
		unauth.ResponseStatus.Message != "Authentication failed, attempted: bearer" || unauth.User.Username != "" {
		t.Errorf("401 event: stage %s, user %+v, responseStatus %+v", unauth.Stage, unauth.User, unauth.ResponseStatus)
	}
	for _, e := range events {
		if string(e.AuditID) == unauthID && e.Stage != auditv1.StageResponseStarted {
			t.Errorf("the 401 has a %s event too", e.Stage)
		}
	}

	// 7. `leasehold audit nodes/NAME` tells the incident as one timeline:
	// the admin's delete, the collector's delete with its reason, the
	// node's 404 get, its lease created again.
	out := runLeasehold(t, "audit", "nodes/"+name, "--audit-log-path", logPath)
	lines := strings.Split(out, "\n")
	at := func(from int, what string, parts ...string) int {
		for i := from; i < len(lines); i++ {
			if testdeps.ContainsAll(lines[i], parts...) {
				return i
			}
		}
		t.Errorf("leasehold audit nodes/%s: no line for %s (%q) after line %d:\n%s", name, what, parts, from, out)
		return len(lines)
	}
	i := at(0, "the node deletion", "delete", "nodes", " 200 ")
	i = at(i, "the lease collection", "generic-garbage-collector", "delete", "leases", wantReason)
	i = at(i, "the node's 404", "system:node:"+name, "get", "leases", " 404 ")
	at(i, "the lease re-created", "system:node:"+name, "create", "leases", " 201 ")
	t.Logf("leasehold audit nodes/%s:\n%s", name, out)
}

// auditID sends one request, checks its code and returns the Audit-ID the
// response carried.
func (cl *caller) auditID(method, path string, code int) string {
	cl.t.Helper()
	req, err := http.NewRequest(method, cl.base+path, nil)
	if err != nil {
		cl.t.Fatal(err)
	}
	if cl.token != "" {
		req.Header.Set("Authorization", "Bearer "+cl.token)
	}
	resp, err := cl.hc.Do(req)
	if err != nil {
		cl.t.Fatalf("%s: %s %s: %v", cl.name, method, path, err)
	}
	resp.Body.Close()
	if resp.StatusCode != code {
		cl.t.Errorf("%s: %s %s = %d, want %d", cl.name, method, path, resp.StatusCode, code)
	}
	id := resp.Header.Get("Audit-ID")
	if id == "" {
		cl.t.Errorf("%s: %s %s: no Audit-ID header", cl.name, method, path)
	}
	return id
}

func readAuditLog(t *testing.T, path string) []*auditv1.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("audit log: %v", err)
	}
	defer f.Close()
	var events []*auditv1.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var e auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit log line %d is not an event: %v\n%s", len(events)+1, err, sc.Bytes())
		}
		if e.Kind != "Event" || e.APIVersion != "audit.k8s.io/v1" || e.AuditID == "" || e.RequestReceivedTimestamp.IsZero() || e.StageTimestamp.IsZero() {
			t.Errorf("audit log line %d lacks kind, apiVersion, auditID or timestamps: %s", len(events)+1, sc.Bytes())
		}
		events = append(events, &e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return events
}

// findEvent returns the ResponseComplete (or only) event that match
// selects.
func findEvent(t *testing.T, events []*auditv1.Event, what string, match func(*auditv1.Event) bool) *auditv1.Event {
	t.Helper()
	var found *auditv1.Event
	for _, e := range events {
		if match(e) && (found == nil || e.Stage == auditv1.StageResponseComplete) {
			found = e
		}
	}
	if found == nil {
		t.Fatalf("no audit event for %s among %d events", what, len(events))
	}
	return found
}

func checkEvent(t *testing.T, what string, e *auditv1.Event, level auditv1.Level, code int32) {
	t.Helper()
	if e.Level != level || e.Stage != auditv1.StageResponseComplete || e.ResponseStatus == nil || e.ResponseStatus.Code != code {
		t.Errorf("%s: level %s stage %s responseStatus %+v, want %s ResponseComplete %d", what, e.Level, e.Stage, e.ResponseStatus, level, code)
	}
	if len(e.SourceIPs) == 0 || e.UserAgent == "" || e.RequestURI == "" {
		t.Errorf("%s: sourceIPs %v userAgent %q requestURI %q", what, e.SourceIPs, e.UserAgent, e.RequestURI)
	}
	if _, ok := e.Annotations["authorization.k8s.io/reason"]; !ok {
		t.Errorf("%s: no authorization.k8s.io/reason annotation: %v", what, e.Annotations)
	}
}

func raw(u *runtime.Unknown) string {
	if u == nil {
		return "<nil>"
	}
	return string(u.Raw)
}

// runLeasehold runs the leasehold binary with args and returns its output.
func runLeasehold(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, leaseholdBinary, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("leasehold %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
