package dashboard_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	startTimeout = 60 * time.Second // the 2-core machine is shared
	stopTimeout  = 20 * time.Second
)

// proc is one leasehold process; its stdout and stderr lines are kept.
type proc struct {
	name string
	t    testing.TB
	cmd  *exec.Cmd

	mu     sync.Mutex
	lines  []string
	grew   chan struct{} // closed and replaced when a line arrives
	done   chan struct{}
	err    error
	signal bool
}

// start runs `leasehold args...`; the process is stopped (SIGTERM, then
// SIGKILL after stopTimeout) when the test ends, and its output printed if
// the test failed.
func start(t testing.TB, name string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, t: t, cmd: exec.Command(binary, args...), grew: make(chan struct{}), done: make(chan struct{})}
	r, w := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = w, w
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	// Owned by the process: the scanner ends when the pipe is closed
	// after the process exits.
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			close(p.grew)
			p.grew = make(chan struct{})
			p.mu.Unlock()
		}
	}()
	go func() {
		p.err = p.cmd.Wait()
		_ = w.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.output())
		}
	})
	return p
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// waitLine returns the first submatches of re on a line of output.
func (p *proc) waitLine(re *regexp.Regexp) []string {
	p.t.Helper()
	deadline := time.After(startTimeout)
	for seen := 0; ; {
		p.mu.Lock()
		for ; seen < len(p.lines); seen++ {
			if m := re.FindStringSubmatch(p.lines[seen]); m != nil {
				p.mu.Unlock()
				return m
			}
		}
		grew := p.grew
		p.mu.Unlock()
		select {
		case <-grew:
		case <-p.done:
			p.t.Fatalf("%s exited (%v) before printing %v:\n%s", p.name, p.err, re, p.output())
		case <-deadline:
			p.t.Fatalf("%s did not print %v within %v:\n%s", p.name, re, startTimeout, p.output())
		}
	}
}

// Stop sends SIGTERM and waits for the process to exit; idempotent.
func (p *proc) Stop() {
	p.mu.Lock()
	sent := p.signal
	p.signal = true
	p.mu.Unlock()
	if sent {
		<-p.done
		return
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		p.t.Errorf("SIGTERM to %s: %v", p.name, err)
	}
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		p.t.Errorf("%s did not exit within %v of SIGTERM; killing it", p.name, stopTimeout)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// server is a running `leasehold serve`.
type server struct {
	*proc
	dataDir, kubeconfig, address string
}

var servingRE = regexp.MustCompile(`^\{.*"msg":"serving".*\}$`)

// startServer runs `leasehold serve` on a free port; the node monitor
// marks a node Unknown after 6 s without a heartbeat, so tests need not
// wait the default 50 s.
func startServer(t testing.TB, extra ...string) *server {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	args := append([]string{"serve", "--data-dir", dir, "--secure-port", "0", "--bind-address", "127.0.0.1",
		"--node-monitor-period", "1s", "--node-monitor-grace-period", "6s"}, extra...)
	p := start(t, "server", args...)
	var line struct {
		Kubeconfig string `json:"kubeconfig"`
		Address    string `json:"address"`
	}
	if err := json.Unmarshal([]byte(p.waitLine(servingRE)[0]), &line); err != nil || line.Kubeconfig == "" || line.Address == "" {
		t.Fatalf("serving line without a kubeconfig and an address: %v", err)
	}
	return &server{proc: p, dataDir: dir, kubeconfig: line.Kubeconfig, address: line.Address}
}

var urlRE = regexp.MustCompile(`^Dashboard: (http://127\.0\.0\.1:[0-9]+/)$`)

// startDashboard runs `leasehold dashboard` on a free loopback port and
// returns it with the URL it printed.
func startDashboard(t testing.TB, kubeconfig string, extra ...string) (*proc, string) {
	t.Helper()
	p := start(t, "dashboard", append([]string{"dashboard", "--kubeconfig", kubeconfig, "--listen", "127.0.0.1:0"}, extra...)...)
	return p, p.waitLine(urlRE)[1]
}
