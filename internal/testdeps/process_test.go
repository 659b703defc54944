package testdeps

import (
	"strings"
	"testing"
	"time"
)

func TestLinesJoinsPartialWrites(t *testing.T) {
	var l Lines
	for _, w := range []string{"a", "b\nc", "\n", "d\ne\n", "f"} {
		if _, err := l.Write([]byte(w)); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := l.String(), "ab\nc\nd\ne\n"; got != want {
		t.Fatalf("lines = %q, want %q (the unfinished f held back)", got, want)
	}
	if got := l.WaitLine(t, 2, time.Second, "e"); got != "e" {
		t.Fatalf("WaitLine from mark 2 = %q, want e", got)
	}
	if _, _, err := l.Await(3, 50*time.Millisecond, nil, "c"); err == nil {
		t.Fatal("Await found a line before its mark")
	}
}

func TestProcessOutputExitAndRestart(t *testing.T) {
	p := StartProcess(t, "sh", ProcessOptions{}, "sh", "-c", "echo out; echo err >&2; exit 3")
	p.WaitLine(0, 10*time.Second, "err")
	if code := p.Wait(10 * time.Second); code != 3 {
		t.Fatalf("exit status %d, want 3", code)
	}
	if _, _, err := p.AwaitLine(0, 10*time.Second, "never"); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("AwaitLine on an exited process: %v, want an error saying it exited", err)
	}
	p.Restart()
	p.Wait(10 * time.Second)
	if got := strings.Count(p.Output(), "out\n"); got != 2 {
		t.Fatalf("output after a restart:\n%s\nwant both runs' lines", p.Output())
	}
}

func TestProcessStopEndsAPausedProcess(t *testing.T) {
	p := StartProcess(t, "sleep", ProcessOptions{StopTimeout: 10 * time.Second}, "sleep", "60")
	p.Pause()
	start := time.Now()
	if err := p.Stop(); err == nil {
		t.Fatal("sleep stopped by SIGTERM exited 0")
	}
	if p.Running() || time.Since(start) > 5*time.Second {
		t.Fatalf("Stop of a paused process: running %v after %v", p.Running(), time.Since(start))
	}
}
