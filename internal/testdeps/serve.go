package testdeps

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"testing"
	"time"
)

// ServeStartTimeout bounds how long `leasehold serve` may take to log its
// serving line; generous because the 2-core machine is shared.
const ServeStartTimeout = 60 * time.Second

// ServeStopTimeout bounds a server's graceful stop before SIGKILL; a server
// drains its connections and closes its store first.
const ServeStopTimeout = 30 * time.Second

// Server is one `leasehold serve` process on 127.0.0.1, read from the
// serving line it logs. Stopping it (Stop, Restart, the test's end) fails
// the test unless it exits with status 0, the server's promise on SIGTERM.
type Server struct {
	*Process
	// URL is the address from the serving line, "https://127.0.0.1:PORT".
	URL string
	// Addr is URL's host:port.
	Addr string
	// Kubeconfig is the admin kubeconfig the server wrote (system:masters).
	Kubeconfig string
	// DataDir is the server's --data-dir.
	DataDir string
}

// ServeOptions are the rarer ways to start a server.
type ServeOptions struct {
	// DataDir is --data-dir; a fresh directory under t.TempDir() if empty.
	// Reuse one to test restarts: the server keeps its CA and objects.
	DataDir string
	// Launcher is a command that execs the rest of its arguments (such as
	// prlimit), so the process it starts is still the server.
	Launcher []string
	// StartTimeout bounds the wait for the serving line;
	// ServeStartTimeout if zero.
	StartTimeout time.Duration
}

// StartServer runs binary's `leasehold serve` with --secure-port 0 on
// 127.0.0.1 and a fresh data directory, plus args, and waits for its
// serving line; the test fails if it does not serve.
func StartServer(t testing.TB, binary string, args ...string) *Server {
	t.Helper()
	s, err := LaunchServer(t, binary, ServeOptions{}, args...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// LaunchServer is StartServer with options, for a test that expects the
// server may refuse to start: it returns an error if the process exits
// before serving (then ExitErr holds its status and the test's end does
// not report it) or does not serve in time (then the test's end stops it).
// An explicit --secure-port in args overrides the free port.
func LaunchServer(t testing.TB, binary string, opts ServeOptions, args ...string) (*Server, error) {
	t.Helper()
	if opts.DataDir == "" {
		opts.DataDir = filepath.Join(t.TempDir(), "data")
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = ServeStartTimeout
	}
	argv := append(append([]string(nil), opts.Launcher...), binary, "serve", "--data-dir", opts.DataDir,
		"--secure-port", "0", "--bind-address", "127.0.0.1")
	p := StartProcess(t, "leasehold serve", ProcessOptions{CleanExit: true, StopTimeout: ServeStopTimeout}, append(argv, args...)...)
	s := &Server{Process: p, DataDir: opts.DataDir}
	line, _, err := p.AwaitLine(0, opts.StartTimeout, `"msg":"serving"`)
	if err != nil {
		if !p.Running() {
			p.Forget()
		}
		return s, err
	}
	return s, s.setAddress(line)
}

// setAddress reads URL, Addr and Kubeconfig from the serving line.
func (s *Server) setAddress(line string) error {
	var l struct {
		Address    string `json:"address"`
		Kubeconfig string `json:"kubeconfig"`
	}
	if err := json.Unmarshal([]byte(line), &l); err != nil {
		return fmt.Errorf("serving line %q: %w", line, err)
	}
	u, err := url.Parse(l.Address)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("serving line has address %q, want https://HOST:PORT (parse error: %v)", l.Address, err)
	}
	if l.Kubeconfig == "" {
		return errors.New("serving line has no kubeconfig")
	}
	s.URL, s.Addr, s.Kubeconfig = l.Address, u.Host, l.Kubeconfig
	return nil
}

// FreePort is a port free on 127.0.0.1 now. Another process may take it
// before the one it is meant for binds it; a caller that cannot afford that
// retries on a new port.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port
}
