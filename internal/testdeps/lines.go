package testdeps

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// Lines is a log kept line by line (a process's output, an in-process
// agent's slog handler), that tests read while it grows: they wait for a
// line (WaitLine), look only at what came after a Mark, and print it all
// when they fail. Write may be called from one goroutine while others
// read. The zero value is ready to use.
type Lines struct {
	mu      sync.Mutex
	lines   []string
	partial []byte        // the start of a line Write has not seen the end of
	grew    chan struct{} // closed and replaced when a line arrives; nil until a reader waits
}

// Write adds the complete lines in b; an unfinished last line waits for
// the next Write. It never fails.
func (l *Lines) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(b)
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			l.partial = append(l.partial, b...)
			return n, nil
		}
		l.addLocked(string(append(l.partial, b[:i]...)))
		l.partial, b = l.partial[:0], b[i+1:]
	}
}

// Add adds one line.
func (l *Lines) Add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.addLocked(line)
}

func (l *Lines) addLocked(line string) {
	l.lines = append(l.lines, line)
	if l.grew != nil {
		close(l.grew)
		l.grew = nil
	}
}

// String is every line so far, each ending in a newline.
func (l *Lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, line := range l.lines {
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// Tail is the last n lines.
func (l *Lines) Tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines[max(0, len(l.lines)-n):], "\n")
}

// Mark is the number of lines so far: a wait from a mark looks only at
// the lines that came after it.
func (l *Lines) Mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lines)
}

// WaitLine waits up to timeout for a line at or after mark that contains
// every one of parts, and returns it; it fails t if none comes.
func (l *Lines) WaitLine(t testing.TB, mark int, timeout time.Duration, parts ...string) string {
	t.Helper()
	line, _, err := l.Await(mark, timeout, nil, parts...)
	if err != nil {
		t.Fatalf("log: %v; log:\n%s", err, l.String())
	}
	return line
}

// errEnded is Await's answer when its writer has ended without writing the
// line.
var errEnded = errors.New("the writer ended first")

// Await waits up to timeout for a line at or after mark that contains
// every one of parts, and returns it with its index (index+1 marks what
// comes after it). It gives up with errEnded once ended is closed (the
// writer is gone: a process exited) and the lines written before hold none.
func (l *Lines) Await(mark int, timeout time.Duration, ended <-chan struct{}, parts ...string) (string, int, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for i, finished := mark, false; ; {
		l.mu.Lock()
		for ; i < len(l.lines); i++ {
			if ContainsAll(l.lines[i], parts...) {
				line := l.lines[i]
				l.mu.Unlock()
				return line, i, nil
			}
		}
		if l.grew == nil {
			l.grew = make(chan struct{})
		}
		grew := l.grew
		l.mu.Unlock()
		if finished {
			return "", 0, fmt.Errorf("no line with %q: %w", parts, errEnded)
		}
		select {
		case <-grew:
		case <-ended:
			// One more look: lines written before the end may have arrived
			// after the last one.
			finished = true
		case <-deadline.C:
			return "", 0, fmt.Errorf("no line with %q within %v", parts, timeout)
		}
	}
}

// ContainsAll reports whether s contains every one of parts.
func ContainsAll(s string, parts ...string) bool {
	for _, part := range parts {
		if !strings.Contains(s, part) {
			return false
		}
	}
	return true
}
