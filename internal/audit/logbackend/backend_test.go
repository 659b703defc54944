package logbackend

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// event returns an event numbered seq (its auditID) with pad bytes of
// annotation, to fill files quickly.
func event(seq, pad int) *auditv1.Event {
	ev := &auditv1.Event{Level: auditv1.LevelMetadata, AuditID: types.UID("e-" + strconv.Itoa(seq)), Stage: auditv1.StageResponseComplete,
		Verb: "update", RequestURI: "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1"}
	ev.Kind, ev.APIVersion = "Event", "audit.k8s.io/v1"
	if pad > 0 {
		ev.Annotations = map[string]string{"pad": strings.Repeat("x", pad)}
	}
	return ev
}

// start runs b until the test ends.
func start(t *testing.T, b *Backend) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
			if err := b.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// readSeqs returns the sequence numbers of every line of the log at path
// (its rotated files first, oldest first), failing on any torn line.
func readSeqs(t *testing.T, path string) []int {
	t.Helper()
	backups, err := Backups(path)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int
	for _, b := range append(backups, Backup{Path: path}) {
		f, err := os.Open(b.Path)
		if errors.Is(err, os.ErrNotExist) && b.Path == path {
			// Killed between a rotation's rename and the new file's
			// creation: no current file, and nothing lost.
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var r io.Reader = f
		if b.Compressed {
			zr, err := gzip.NewReader(f)
			if err != nil {
				t.Fatalf("%s: %v", b.Path, err)
			}
			r = zr
		}
		data, err := io.ReadAll(r)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", b.Path, err)
		}
		if len(data) > 0 && data[len(data)-1] != '\n' {
			t.Fatalf("%s ends in a torn line", b.Path)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var ev auditv1.Event
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Fatalf("%s: line %q: %v", b.Path, sc.Text(), err)
			}
			n, err := strconv.Atoi(strings.TrimPrefix(string(ev.AuditID), "e-"))
			if err != nil {
				t.Fatal(err)
			}
			seqs = append(seqs, n)
		}
	}
	return seqs
}

// contiguous fails unless seqs is from, from+1, ..., to.
func contiguous(t *testing.T, seqs []int, from, to int) {
	t.Helper()
	if len(seqs) == 0 || seqs[0] != from || seqs[len(seqs)-1] != to || len(seqs) != to-from+1 {
		t.Fatalf("lines %d..%d (%d of them), want %d..%d", first(seqs), first(seqs[max(len(seqs)-1, 0):]), len(seqs), from, to)
	}
	for i := range seqs {
		if seqs[i] != from+i {
			t.Fatalf("line %d is event %d, want %d", i, seqs[i], from+i)
		}
	}
}

func first(s []int) int {
	if len(s) == 0 {
		return -1
	}
	return s[0]
}

func TestBlockingWritesLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "audit.log")
	reg := prometheus.NewPedanticRegistry()
	b, err := New(Options{Path: path, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	start(t, b)
	for i := range 10 {
		if !b.ProcessEvents(event(i, 0)) {
			t.Fatal("ProcessEvents failed")
		}
	}
	contiguous(t, readSeqs(t, path), 0, 9)
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("log file mode %v (%v), want 0600", info.Mode(), err)
	}
	if got := testutil.ToFloat64(b.events); got != 10 {
		t.Errorf("apiserver_audit_event_total = %v", got)
	}
	if got := testutil.ToFloat64(b.errors); got != 0 {
		t.Errorf("apiserver_audit_error_total = %v", got)
	}
	if n, err := testutil.GatherAndCount(reg, "apiserver_audit_event_total", "apiserver_audit_error_total"); err != nil || n != 2 {
		t.Errorf("registry has %d of the two metrics (%v)", n, err)
	}
}

func TestStdout(t *testing.T) {
	var out bytes.Buffer
	b, err := New(Options{Path: "-", Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	start(t, b)
	b.ProcessEvents(event(1, 0), event(2, 0))
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"e-1"`) {
		t.Errorf("stdout %q", out.String())
	}
}

func TestRotationKeepsMaxBackups(t *testing.T) {
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprintf("compress=%v", compress), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.log")
			clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			var mu sync.Mutex
			now := func() time.Time { mu.Lock(); defer mu.Unlock(); clock = clock.Add(time.Second); return clock }
			b, err := New(Options{Path: path, MaxSizeMB: 1, MaxBackups: 2, Compress: compress, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			start(t, b)
			const events = 400 // 10 KB each: four files' worth
			for i := range events {
				b.ProcessEvents(event(i, 10<<10))
			}
			var backups []Backup
			waitFor(t, func() bool {
				backups, err = Backups(path)
				if err != nil || len(backups) != 2 {
					return false
				}
				for _, bk := range backups {
					if bk.Compressed != compress {
						return false
					}
				}
				return true
			})
			if strings.HasSuffix(backups[0].Path, ".log") == compress || !strings.Contains(backups[0].Path, "audit-2026-01-02T03-04-") {
				t.Errorf("backups %v", backups)
			}
			seqs := readSeqs(t, path)
			// The oldest file was pruned: what is left is the newest events,
			// with no gap.
			contiguous(t, seqs, seqs[0], events-1)
			if seqs[0] == 0 {
				t.Error("nothing was pruned")
			}
			if info, _ := os.Stat(path); info.Size() > 1<<20 {
				t.Errorf("current file %d bytes, over the 1 MB maximum", info.Size())
			}
		})
	}
}

func TestMaxAge(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	now := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
	old := filepath.Join(dir, "audit-"+now.Add(-3*24*time.Hour).Format(BackupTimeFormat)+".log.gz")
	recent := filepath.Join(dir, "audit-"+now.Add(-time.Hour).Format(BackupTimeFormat)+".log")
	for _, p := range []string{old, recent} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b, err := New(Options{Path: path, MaxAgeDays: 2, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	start(t, b) // housekeeping runs once at start
	waitFor(t, func() bool { return !exists(old) })
	if !exists(recent) {
		t.Error("a backup younger than maxage was removed")
	}
}

func TestBackupsPreferUnfinishedCompression(t *testing.T) {
	dir := t.TempDir()
	stamp := "audit-2026-01-02T03-04-05.000.log"
	for _, n := range []string{stamp, stamp + ".gz", stamp + ".gz.tmp", "audit-notatime.log", "other.log"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Backups(filepath.Join(dir, "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Path != filepath.Join(dir, stamp) || got[0].Compressed {
		t.Errorf("Backups = %+v, want only the uncompressed %s", got, stamp)
	}
}

// stalledWriter blocks every write until released: a disk that stopped.
type stalledWriter struct {
	release chan struct{}
	mu      sync.Mutex
	lines   int
}

func (w *stalledWriter) Write(p []byte) (int, error) {
	<-w.release
	w.mu.Lock()
	w.lines += bytes.Count(p, []byte("\n")) // a batch is several lines
	w.mu.Unlock()
	return len(p), nil
}

func TestBatchNeverBlocksOnAStalledDisk(t *testing.T) {
	w := &stalledWriter{release: make(chan struct{})}
	reg := prometheus.NewPedanticRegistry()
	b, err := New(Options{Path: "-", Stdout: w, Mode: ModeBatch, BufferSize: 100, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	stop := start(t, b)
	const sent = 1000
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range sent {
			b.ProcessEvents(event(i, 0))
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		close(w.release)
		t.Fatal("ProcessEvents blocked on a stalled disk")
	}
	dropped := testutil.ToFloat64(b.errors)
	// The buffer holds 100 and Run holds one batch, stuck in Write.
	if dropped < sent-100-maxBatchEvents || dropped > sent-100 {
		t.Errorf("dropped %v of %d with a buffer of 100", dropped, sent)
	}
	if got := testutil.ToFloat64(b.events); got != sent {
		t.Errorf("apiserver_audit_event_total = %v, want %d", got, sent)
	}
	close(w.release)
	stop()
	if w.lines+int(dropped) != sent {
		t.Errorf("wrote %d and dropped %v of %d", w.lines, dropped, sent)
	}
	want := fmt.Sprintf("# HELP apiserver_audit_error_total Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error.\n# TYPE apiserver_audit_error_total counter\napiserver_audit_error_total{plugin=\"log\"} %v\n", dropped)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "apiserver_audit_error_total"); err != nil {
		t.Error(err)
	}
	// After Run stopped, events are dropped and counted, never stuck.
	if b.ProcessEvents(event(sent, 0)) || testutil.ToFloat64(b.errors) != dropped+1 {
		t.Error("an event after Run stopped was not counted as dropped")
	}
}

func TestOptionsErrors(t *testing.T) {
	for _, o := range []Options{{Path: "-", Mode: "fast"}, {Path: ""}, {Path: "-", Mode: ModeBatch, BufferSize: -1},
		{Path: "-", MaxBackups: -1}} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
	reg := prometheus.NewRegistry()
	if _, err := New(Options{Path: "-", Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{Path: "-", Registerer: reg}); err == nil {
		t.Error("a second backend registered the same metrics")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
