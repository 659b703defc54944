package e2e

// The audit flags on a real server: an invalid policy stops the start with
// the file and line; batch mode keeps serving while the log cannot be
// written (events dropped and counted); a watch's stages; rotation by size
// with --audit-log-maxbackup and --audit-log-compress.

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

const metadataPolicy = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"

func writePolicy(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAuditInvalidPolicyStopsTheStart(t *testing.T) {
	t.Parallel()
	policy := writePolicy(t, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n- level: Everything\n")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	out, err := exec.CommandContext(ctx, leaseholdBinary, "serve", "--data-dir", filepath.Join(dir, "data"), "--secure-port", "0",
		"--audit-log-path", filepath.Join(dir, "audit.log"), "--audit-policy-file", policy).CombinedOutput()
	if err == nil {
		t.Fatalf("serve started with an invalid audit policy:\n%s", out)
	}
	if ctx.Err() != nil {
		t.Fatalf("serve did not exit on an invalid audit policy:\n%s", out)
	}
	for _, want := range []string{policy, "line 5", "Everything"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("serve's error does not name %q:\n%s", want, out)
		}
	}
}

// TestAuditBatchModeSurvivesAStalledLog: the log is a FIFO nobody reads, so
// the backend's writes block as a stalled disk's would. Requests keep
// being answered; the events that do not fit the buffer are dropped and
// counted.
func TestAuditBatchModeSurvivesAStalledLog(t *testing.T) {
	t.Parallel()
	logPath := filepath.Join(t.TempDir(), "audit.fifo")
	if err := syscall.Mkfifo(logPath, 0o600); err != nil {
		t.Fatal(err)
	}
	// Held open for reading (so the server's open does not block) and not
	// read until the end.
	reader, err := os.OpenFile(logPath, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	srv := startServer(t, "--audit-log-path", logPath, "--audit-policy-file", writePolicy(t, metadataPolicy),
		"--audit-log-mode", "batch", "--audit-log-batch-buffer-size", "50")
	_, cs := adminClient(t, srv)
	start := time.Now()
	const n = 300
	for i := range n {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("stalled-%d", i)}}
		if _, err := cs.CoordinationV1().Leases("default").Create(context.Background(), l, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %d while the audit log is stalled: %v", i, err)
		}
	}
	t.Logf("%d creates with a stalled audit log in %v", n, time.Since(start))
	dropped := metricSum(t, cs, "apiserver_audit_error_total", `plugin="log"`)
	events := metricSum(t, cs, "apiserver_audit_event_total")
	if dropped == 0 || events < n {
		t.Errorf("apiserver_audit_error_total = %v, apiserver_audit_event_total = %v: want drops counted among at least %d events", dropped, events, n)
	}
	// Unstall the log so the server can write what it buffered and exit.
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		_ = syscall.SetNonblock(int(reader.Fd()), false)
		_, _ = io.Copy(io.Discard, reader)
	}()
	srv.Stop()
	reader.Close()
	<-drained
}

// TestAuditWatchStages: a watch is logged at RequestReceived,
// ResponseStarted and ResponseComplete, in order, under one audit ID.
func TestAuditWatchStages(t *testing.T) {
	t.Parallel()
	logPath := filepath.Join(t.TempDir(), "audit.log")
	srv := startServer(t, "--audit-log-path", logPath, "--audit-policy-file", writePolicy(t, metadataPolicy))
	_, cs := adminClient(t, srv)
	timeout := int64(1)
	w, err := cs.CoordinationV1().Leases("kube-system").Watch(context.Background(), metav1.ListOptions{TimeoutSeconds: &timeout})
	if err != nil {
		t.Fatal(err)
	}
	for range w.ResultChan() {
	}
	srv.Stop()
	var stages []auditv1.Stage
	var id string
	for _, e := range readAuditLog(t, logPath) {
		if e.Verb != "watch" || e.ObjectRef == nil || e.ObjectRef.Namespace != "kube-system" || e.User.Username == "" || !strings.Contains(e.RequestURI, "timeoutSeconds=1") {
			continue
		}
		if id == "" {
			id = string(e.AuditID)
		}
		if string(e.AuditID) == id {
			stages = append(stages, e.Stage)
			if e.Stage != auditv1.StageRequestReceived && (e.ResponseStatus == nil || e.ResponseStatus.Code != 200) {
				t.Errorf("watch %s event responseStatus = %+v, want 200", e.Stage, e.ResponseStatus)
			}
		}
	}
	want := []auditv1.Stage{auditv1.StageRequestReceived, auditv1.StageResponseStarted, auditv1.StageResponseComplete}
	if fmt.Sprint(stages) != fmt.Sprint(want) {
		t.Errorf("watch stages = %v, want %v", stages, want)
	}
}

// TestAuditLogRotation: with --audit-log-maxsize 1 the log rotates at 1 MB;
// --audit-log-maxbackup 2 keeps two rotated files, gzipped; `leasehold
// audit` reads the current and the rotated files.
func TestAuditLogRotation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	logPath := filepath.Join(dir, "audit.log")
	srv := startServer(t, "--audit-log-path", logPath, "--audit-log-maxsize", "1", "--audit-log-maxbackup", "2", "--audit-log-compress",
		"--audit-policy-file", writePolicy(t, "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: RequestResponse\n  resources: [{group: coordination.k8s.io}]\n- level: None\n"))
	_, cs := adminClient(t, srv)
	// Each create logs its 100 kB request and response: about 5 MB in all.
	big := strings.Repeat("x", 100<<10)
	for i := range 25 {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("big-%02d", i), Annotations: map[string]string{"pad": big}}}
		if _, err := cs.CoordinationV1().Leases("default").Create(context.Background(), l, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	srv.Stop()
	var current, gz int
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch name := e.Name(); {
		case name == "audit.log":
			current++
		case strings.HasPrefix(name, "audit-") && strings.HasSuffix(name, ".log.gz"):
			gz++
		case strings.HasPrefix(name, "audit-"):
			t.Errorf("rotated file %s is not compressed", name)
		}
	}
	if current != 1 || gz != 2 {
		t.Errorf("%d current and %d gzipped rotated files, want 1 and 2 (--audit-log-maxbackup 2): %v", current, gz, entries)
	}
	readAuditLog(t, logPath) // every line whole
	// The last lease's events are in the newest files.
	out := runLeasehold(t, "audit", "leases/default/big-24", "--audit-log-path", logPath)
	if !strings.Contains(out, "create") || !strings.Contains(out, "201") {
		t.Errorf("leasehold audit leases/default/big-24:\n%s", out)
	}
}
