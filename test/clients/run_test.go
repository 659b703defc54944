package clients

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// runChecks runs argv in dir with env added, under timeout: a script that
// runs the named checks and prints "ok NAME" or "FAIL NAME: why..." for
// each (python/checks.py, js/checks.mjs). Each check becomes a subtest
// that fails with its report; a script that dies before reporting a check
// fails that check with the whole output. The script runs in its own
// process group, which the deadline kills by its PID.
func runChecks(t *testing.T, timeout time.Duration, dir string, env []string, checks []string, argv ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], checks...)...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (killed after %v)", err, timeout)
	}
	reports := splitReports(string(out))
	for _, c := range checks {
		t.Run(c, func(t *testing.T) {
			switch r, ok := reports[c]; {
			case !ok:
				t.Fatalf("%s did not report %s (%v):\n%s", strings.Join(argv, " "), c, err, out)
			case r != "":
				t.Fatal(r)
			}
		})
	}
	if err != nil && !t.Failed() {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
}

// splitReports maps each check to "" (ok) or its FAIL report, which runs
// to the next report line.
func splitReports(out string) map[string]string {
	reports := map[string]string{}
	current := ""
	for _, line := range strings.Split(out, "\n") {
		if name, ok := strings.CutPrefix(line, "ok "); ok {
			reports[name], current = "", ""
			continue
		}
		if rest, ok := strings.CutPrefix(line, "FAIL "); ok {
			name, _, _ := strings.Cut(rest, ":")
			reports[name], current = line+"\n", name
			continue
		}
		if current != "" {
			reports[current] += line + "\n"
		}
	}
	return reports
}

// candidate is one leader-election process whose stdout is watched for
// "LEADING <identity>".
type candidate struct {
	id     string
	cmd    *exec.Cmd
	mu     sync.Mutex
	out    strings.Builder
	exited chan struct{}
}

// startCandidate starts cmd (its own process group) and follows its
// output; the test's cleanup kills it by PID if it is still running.
func startCandidate(t *testing.T, id string, cmd *exec.Cmd, leading chan<- *candidate) *candidate {
	t.Helper()
	c := &candidate{id: id, cmd: cmd, exited: make(chan struct{})}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// Logs go to the output kept for failures, never into the stdout lines
	// scanned: an unbuffered interpreter's log line can land between
	// "LEADING id" and its newline.
	cmd.Stderr = c
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting candidate %s: %v", id, err)
	}
	// Owned by the process: it ends when the process's output closes.
	go func() {
		defer close(c.exited)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.mu.Lock()
			c.out.WriteString(sc.Text() + "\n")
			c.mu.Unlock()
			if sc.Text() == "LEADING "+id {
				leading <- c
			}
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		c.kill()
		if t.Failed() {
			t.Logf("candidate %s output:\n%s", id, c.output())
		}
	})
	return c
}

// kill stops the candidate's process group at once, as a crash would, and
// waits for it to be gone. Idempotent.
func (c *candidate) kill() {
	if err := syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		panic(fmt.Sprintf("killing candidate %s: %v", c.id, err))
	}
	<-c.exited
}

// Write keeps the candidate's stderr with its output.
func (c *candidate) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.Write(p)
}

func (c *candidate) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

// testFailover starts two candidates made by newCmd, waits for one to
// lead, kills it, and waits for the other to take over. Each wait is
// bounded by within.
func testFailover(t *testing.T, within time.Duration, newCmd func(id string) *exec.Cmd) {
	t.Helper()
	leading := make(chan *candidate, 2)
	for _, id := range []string{"alpha", "beta"} {
		startCandidate(t, id, newCmd(id), leading)
	}
	var first *candidate
	select {
	case first = <-leading:
	case <-time.After(within):
		t.Fatalf("no candidate led within %v", within)
	}
	start := time.Now()
	first.kill()
	select {
	case next := <-leading:
		if next == first {
			t.Fatalf("%s led twice", first.id)
		}
		t.Logf("%s led; after it was killed, %s led %v later", first.id, next.id, time.Since(start).Round(100*time.Millisecond))
	case <-time.After(within):
		t.Fatalf("after %s (the leader) was killed, no other candidate led within %v", first.id, within)
	}
}
