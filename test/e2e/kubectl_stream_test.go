package e2e

import (
	"bufio"
	"context"
	"strings"
	"sync"
	"time"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// kubectlStream is a long-running kubectl (get -w, logs -f, ...) whose
// stdout is read line by line while the test acts on the server.
type kubectlStream struct {
	k      *kubectlRunner
	args   []string
	lines  chan string
	cancel context.CancelFunc
	// done is closed once the process has exited and its stdout is drained.
	done    chan struct{}
	stderr  *testdeps.Lines
	seen    []string
	stopped sync.Once
}

// stream starts kubectl args in the background. It is killed by stop or,
// at the latest, when the test ends or kubectlTimeout passes.
func (k *kubectlRunner) stream(args ...string) *kubectlStream {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	cmd := k.command(ctx, nil, args...)
	s := &kubectlStream{k: k, args: args, lines: make(chan string, 64), cancel: cancel, done: make(chan struct{}), stderr: &testdeps.Lines{}}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		k.t.Fatalf("kubectl stdout pipe: %v", err)
	}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		cancel()
		k.t.Fatalf("starting kubectl %s: %v", strings.Join(args, " "), err)
	}
	// Owned by the stream: it ends when the process exits, which stop
	// forces by cancelling ctx.
	go func() {
		defer close(s.done)
		defer close(s.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case s.lines <- sc.Text():
			case <-ctx.Done():
			}
		}
		_ = cmd.Wait()
	}()
	k.t.Cleanup(s.stop)
	return s
}

// waitFor reads lines until match accepts one and returns it; it fails the
// test if the process ends or timeout passes first.
func (s *kubectlStream) waitFor(timeout time.Duration, what string, match func(line string) bool) string {
	s.k.t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				s.k.t.Fatalf("kubectl %s ended before printing %s; stdout:\n%s\nstderr:\n%s",
					strings.Join(s.args, " "), what, strings.Join(s.seen, "\n"), s.stderr.String())
			}
			s.seen = append(s.seen, line)
			if match(line) {
				return line
			}
		case <-timer.C:
			s.k.t.Fatalf("kubectl %s printed no %s within %v; stdout:\n%s\nstderr:\n%s",
				strings.Join(s.args, " "), what, timeout, strings.Join(s.seen, "\n"), s.stderr.String())
		}
	}
}

// stop kills the process and waits until it is gone. Idempotent.
func (s *kubectlStream) stop() {
	s.stopped.Do(func() {
		s.cancel()
		<-s.done
	})
}
