package e2e

import (
	"encoding/csv"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// haproxyProc is Debian's haproxy run as a real TCP load balancer in front
// of `serve` replicas, as an operator runs it: TLS passes through to the
// replicas (mode tcp), and each replica is health-checked with
// GET /readyz over TLS (its certificate verified), so a replica that fails /readyz (or is gone)
// receives no new connections.
type haproxyProc struct {
	// Addr is the balancer's frontend, 127.0.0.1:PORT.
	Addr string

	t    *testing.T
	proc *testdeps.Process
	sock string // the stats socket
}

// Health-check timings: a replica is down after 2 failed checks 300 ms
// apart and up again after 2 good ones, so the balancer follows a replica
// within about a second.
const (
	haproxyCheckInter = 300 * time.Millisecond
	haproxyFall       = 2
	haproxyRise       = 2
	// haproxyFollow bounds how long the balancer may take to see a change
	// of a replica's health (fall or rise checks, each up to the check
	// timeout), with room for a loaded machine.
	haproxyFollow = 10 * time.Second
)

// haproxyConfig is the configuration: one frontend on 127.0.0.1, one
// backend with every replica (name -> host:port), health-checked over TLS
// verified against the replicas' shared CA (caFile); a stats socket lets
// the test read what the balancer thinks of each replica.
func haproxyConfig(frontend, sock, caFile string, backends map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `global
    stats socket %s mode 600 level admin
    maxconn 2000
defaults
    mode tcp
    timeout connect 2s
    timeout client 1h
    timeout server 1h
    timeout check 2s
    # A connection refused by a dead replica is tried once more, then
    # on another replica.
    retries 2
    option redispatch
frontend apiserver
    bind %s
    default_backend replicas
backend replicas
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
    default-server check check-ssl verify required ca-file %s inter %dms fall %d rise %d
`, sock, frontend, caFile, haproxyCheckInter.Milliseconds(), haproxyFall, haproxyRise)
	names := make([]string, 0, len(backends))
	for n := range backends {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(&b, "    server %s %s\n", n, backends[n])
	}
	return b.String()
}

// startHAProxy starts haproxy in the foreground (-db, one process, so its
// PID is the balancer) on a free port in front of backends, whose serving
// certificates caFile signs, and waits until it accepts connections. It is
// stopped by PID when the test ends.
func startHAProxy(t *testing.T, caFile string, backends map[string]string) *haproxyProc {
	t.Helper()
	bin := testdeps.Debian(t, "haproxy", "haproxy")
	dir := t.TempDir()
	p := &haproxyProc{
		Addr: fmt.Sprintf("127.0.0.1:%d", testdeps.FreePort(t)),
		t:    t, sock: filepath.Join(dir, "stats.sock"),
	}
	cfg := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(haproxyConfig(p.Addr, p.sock, caFile, backends)), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-c", "-f", cfg).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
	// haproxy stops at once on SIGTERM (a hard stop in -db mode).
	p.proc = testdeps.StartProcess(t, "haproxy", testdeps.ProcessOptions{StopTimeout: 10 * time.Second}, bin, "-db", "-f", cfg)
	if _, err := waitFor(15*time.Second, func() (bool, error) {
		_, err := p.States()
		return err == nil, err
	}); err != nil {
		t.Fatalf("haproxy did not start within 15s: %v; log:\n%s", err, p.proc.Output())
	}
	return p
}

// States is the balancer's view of each replica (name -> UP, DOWN, or a
// transition such as "UP 1/2"), read from `show stat` on the stats socket.
func (p *haproxyProc) States() (map[string]string, error) {
	conn, err := net.DialTimeout("unix", p.sock, 2*time.Second)
	if err != nil {
		return nil, fmt.Errorf("haproxy stats socket: %w", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(conn, "show stat\n"); err != nil {
		return nil, fmt.Errorf("haproxy show stat: %w", err)
	}
	out, err := io.ReadAll(conn)
	if err != nil {
		return nil, fmt.Errorf("haproxy show stat: %w", err)
	}
	r := csv.NewReader(strings.NewReader(strings.TrimPrefix(string(out), "# ")))
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil || len(rows) < 2 {
		return nil, fmt.Errorf("haproxy show stat: %q: %v", out, err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	states := map[string]string{}
	for _, row := range rows[1:] {
		if row[col["pxname"]] == "replicas" && row[col["svname"]] != "BACKEND" {
			states[row[col["svname"]]] = row[col["status"]]
		}
	}
	return states, nil
}

// WaitStates waits until every replica named in want is in its state
// (UP or DOWN) as the balancer sees it, and returns how long that took.
func (p *haproxyProc) WaitStates(want map[string]string, within time.Duration) time.Duration {
	p.t.Helper()
	var last map[string]string
	took, err := waitFor(within, func() (bool, error) {
		s, err := p.States()
		if err != nil {
			return false, err
		}
		last = s
		for n, st := range want {
			if s[n] != st {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		p.t.Fatalf("haproxy: replicas not %v within %v (last %v): %v", want, within, last, err)
	}
	return took
}
