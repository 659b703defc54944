package elect

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for exec's copy goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startSh(t *testing.T, script string, env []string) (*process, *syncBuffer) {
	t.Helper()
	out := &syncBuffer{}
	p, err := startProcess([]string{"sh", "-c", script}, env, out, out)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { p.Stop(0) })
	return p, out
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestProcessExitCodePropagates(t *testing.T) {
	for _, code := range []int{0, 3, 42, 255} {
		p, _ := startSh(t, "exit "+strconv.Itoa(code), nil)
		<-p.Done()
		if got := p.ExitCode(); got != code {
			t.Errorf("exit %d: got code %d", code, got)
		}
	}
}

func TestProcessKilledBySignalReportsShellCode(t *testing.T) {
	p, _ := startSh(t, "kill -USR1 $$; sleep 5", nil)
	<-p.Done()
	if got, want := p.ExitCode(), 128+int(syscall.SIGUSR1); got != want {
		t.Errorf("code %d, want %d", got, want)
	}
}

func TestProcessStopSendsTermToTheGroup(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "grandchild-term")
	// The grandchild records SIGTERM: the whole process group is signalled,
	// not only the direct child.
	script := `trap 'wait; exit 7' TERM
(trap 'echo term > ` + marker + `; exit 0' TERM; echo ready; while :; do sleep 0.05; done) &
while :; do sleep 0.05; done`
	p, out := startSh(t, script, nil)
	waitFor(t, "grandchild ready", func() bool { return strings.Contains(out.String(), "ready") })
	start := time.Now()
	p.Stop(5 * time.Second)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("stop of a cooperative command took %v", took)
	}
	if got := p.ExitCode(); got != 7 {
		t.Errorf("exit code %d, want the command's own 7", got)
	}
	if b, err := os.ReadFile(marker); err != nil || strings.TrimSpace(string(b)) != "term" {
		t.Errorf("grandchild did not get SIGTERM: %q, %v", b, err)
	}
}

func TestProcessStopKillsAfterGrace(t *testing.T) {
	p, out := startSh(t, `trap '' TERM; echo ready; while :; do sleep 0.05; done`, nil)
	waitFor(t, "ready", func() bool { return strings.Contains(out.String(), "ready") })
	const grace = 300 * time.Millisecond
	start := time.Now()
	p.Stop(grace)
	took := time.Since(start)
	if took < grace {
		t.Errorf("SIGKILL came after %v, before the grace period %v", took, grace)
	}
	if took > grace+2*time.Second {
		t.Errorf("stop took %v, far beyond the grace period %v", took, grace)
	}
	if got, want := p.ExitCode(), 128+int(syscall.SIGKILL); got != want {
		t.Errorf("code %d, want %d", got, want)
	}
}

func TestProcessStopIsIdempotentAndConcurrent(t *testing.T) {
	p, out := startSh(t, `echo ready; while :; do sleep 0.05; done`, nil)
	waitFor(t, "ready", func() bool { return strings.Contains(out.String(), "ready") })
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { p.Stop(time.Second) })
	}
	wg.Wait()
	p.Stop(time.Second) // after exit: returns at once
	select {
	case <-p.Done():
	default:
		t.Fatal("not done after Stop")
	}
}

func TestProcessStopAfterExitKeepsCode(t *testing.T) {
	p, _ := startSh(t, "exit 5", nil)
	<-p.Done()
	p.Stop(time.Second)
	if got := p.ExitCode(); got != 5 {
		t.Errorf("code %d after Stop of an exited command, want 5", got)
	}
}

func TestProcessOwnProcessGroup(t *testing.T) {
	p, out := startSh(t, `echo ready; while :; do sleep 0.05; done`, nil)
	waitFor(t, "ready", func() bool { return strings.Contains(out.String(), "ready") })
	pgid, err := syscall.Getpgid(p.Pid())
	if err != nil {
		t.Fatal(err)
	}
	if pgid != p.Pid() || pgid == syscall.Getpgrp() {
		t.Errorf("child pgid %d, pid %d, ours %d: want its own group", pgid, p.Pid(), syscall.Getpgrp())
	}
}

func TestProcessEnvAndOutputPassThrough(t *testing.T) {
	env := commandEnv([]string{"PATH=" + os.Getenv("PATH")}, "me", "ns/l", 9)
	p, out := startSh(t, `echo "$LEASEHOLD_IDENTITY $LEASEHOLD_LEASE $LEASEHOLD_FENCING_TOKEN"; echo err >&2`, env)
	<-p.Done()
	if got := out.String(); got != "me ns/l 9\nerr\n" {
		t.Errorf("output %q", got)
	}
}

func TestProcessStartFailureCodes(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		argv []string
		code int
	}{
		{[]string{"leasehold-no-such-command-xyz"}, ExitNotFound},
		{[]string{filepath.Join(dir, "missing")}, ExitNotFound},
		{[]string{notExec}, ExitCannotExecute},
	} {
		_, err := startProcess(tc.argv, nil, &syncBuffer{}, &syncBuffer{})
		se, ok := err.(*startError)
		if !ok {
			t.Errorf("%v: error %v (%T), want *startError", tc.argv, err, err)
			continue
		}
		if se.code != tc.code {
			t.Errorf("%v: code %d, want %d (%v)", tc.argv, se.code, tc.code, err)
		}
	}
}
