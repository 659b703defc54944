package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/internal/audit/timeline"
)

// writeSeedLog writes the seed document's five audit events (kept as
// internal/audit's test data) as a one-line-per-event log.
func writeSeedLog(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.log")
	var log bytes.Buffer
	for _, name := range []string{"node-delete", "lease-delete", "lease-get-404", "lease-update", "lease-create"} {
		raw, err := os.ReadFile(filepath.Join("..", "..", "internal", "audit", "testdata", "seed-"+name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Compact(&log, raw); err != nil {
			t.Fatal(err)
		}
		log.WriteByte('\n')
	}
	// A line that mentions the node but is no event is skipped and counted.
	log.WriteString("{\"name\": \"ip-10-29-79-205.ap-northeast-2.compute.internal\"}\n")
	if err := os.WriteFile(path, log.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestAuditCommand(t *testing.T) {
	path := writeSeedLog(t)
	const node = "ip-10-29-79-205.ap-northeast-2.compute.internal"
	out, errOut, err := runLeasehold(t, "audit", "nodes/"+node, "--audit-log-path", path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	wantVerbs := []string{"delete", "delete", "get", "update", "create"} // by time received
	if len(lines) != 1+len(wantVerbs) {
		t.Fatalf("timeline:\n%s", out)
	}
	for i, v := range wantVerbs {
		if fields := strings.Fields(lines[i+1]); fields[2] != v {
			t.Errorf("line %d: %q, want verb %s", i+1, lines[i+1], v)
		}
	}
	if !strings.Contains(lines[2], `RBAC: allowed by ClusterRoleBinding "system:controller:generic-garbage-collector"`) ||
		!strings.Contains(lines[3], " 404 ") {
		t.Errorf("timeline:\n%s", out)
	}
	if !strings.Contains(errOut, "skipped 1 lines") {
		t.Errorf("stderr %q", errOut)
	}

	out, _, err = runLeasehold(t, "audit", "leases/kube-node-lease/"+node, "--audit-log-path", path,
		"--code", "404", "--since", "2024-04-05T06:00:00Z", "--until", "2024-04-05T07:00:00Z", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var entries []timeline.Entry
	if err := json.Unmarshal([]byte(out), &entries); err != nil || len(entries) != 1 || entries[0].Code != 404 ||
		entries[0].User != "system:node:"+node || !strings.Contains(entries[0].Message, "not found") {
		t.Errorf("json %s (%v)", out, err)
	}

	out, _, err = runLeasehold(t, "audit", "leases/kube-node-lease/"+node, "--audit-log-path", path,
		"--user", "kubernetes-admin", "--verb", "delete")
	if err != nil || strings.Count(out, "\n") != 2 || !strings.Contains(out, "kubernetes-admin") {
		t.Errorf("--user/--verb: %q (%v)", out, err)
	}
}

func TestAuditCommandUsage(t *testing.T) {
	path := writeSeedLog(t)
	for _, args := range [][]string{
		{"audit", "nodes", "--audit-log-path", path},
		{"audit", "nodes/n1"},
		{"audit", "nodes/n1", "--audit-log-path", path, "-o", "yaml"},
		{"audit", "nodes/n1", "--audit-log-path", path, "--since", "last week"},
	} {
		_, _, err := runLeasehold(t, args...)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 2 {
			t.Errorf("%v: error %v, want a usage error (exit 2)", args, err)
		}
	}
	if _, _, err := runLeasehold(t, "audit", "nodes/n1", "--audit-log-path", filepath.Join(t.TempDir(), "none.log")); err == nil {
		t.Error("a missing log was not an error")
	}
}
