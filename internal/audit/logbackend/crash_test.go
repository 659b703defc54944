package logbackend

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const crashHelperEnv = "LOGBACKEND_CRASH_DIR"

// crashHelper writes numbered events forever to dir/audit.log, rotating
// every megabyte and compressing, until it is killed.
func crashHelper(dir string) {
	b, err := New(Options{Path: filepath.Join(dir, "audit.log"), MaxSizeMB: 1, Compress: true})
	if err != nil {
		os.Exit(2)
	}
	go b.Run(context.Background()) // runs until the process is killed
	for i := 0; ; i++ {
		b.ProcessEvents(event(i, 3000))
	}
}

// TestKill9LeavesWholeLines kills a writer with SIGKILL in the middle of
// rotating and compressing, and checks that, once the log is opened again,
// every line on disk is whole and no line is missing between the first and
// the last.
func TestKill9LeavesWholeLines(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashHelperEnv+"="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "audit.log")
	deadline := time.Now().Add(20 * time.Second)
	for {
		backups, _ := Backups(path)
		if len(backups) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the writer did not rotate three times within 20s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	// The kill may have cut the last write short: a torn last line, which
	// the next start drops (dropTornTail). Reopen as a restarted server
	// would, then every line on disk must be whole.
	b, err := New(Options{Path: path, MaxSizeMB: 1, Compress: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	seqs := readSeqs(t, path)
	contiguous(t, seqs, 0, seqs[len(seqs)-1])
	t.Logf("%d whole lines in order after kill -9", len(seqs))
}

// TestOpenDropsATornTail: a log whose last line was cut short is opened
// with that line dropped and the whole lines kept.
func TestOpenDropsATornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	whole := strings.Repeat(`{"kind":"Event"}`+"\n", 5000) // longer than one read chunk
	for _, c := range []struct{ content, want string }{
		{whole + `{"kind":"Ev`, whole},
		{whole, whole},
		{`{"kind":"Ev`, ""},
		{"", ""},
	} {
		if err := os.WriteFile(path, []byte(c.content), 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := New(Options{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("%d bytes with a %d-byte tail: kept %d bytes, want %d", len(c.content), len(c.content)-len(whole), len(got), len(c.want))
		}
	}
}
