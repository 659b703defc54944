package logbackend

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
// rotating and compressing, and checks that every line on disk is whole and
// that no line is missing between the first and the last.
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
	seqs := readSeqs(t, path)
	contiguous(t, seqs, 0, seqs[len(seqs)-1])
	t.Logf("%d whole lines in order after kill -9", len(seqs))
}
