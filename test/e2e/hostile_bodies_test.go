package e2e

// Issue 27's memory attacks against a real `leasehold serve` process: a
// 4 KB JSON patch of copy operations that doubles an array each time, and
// 600 HTTP/2 streams that announce 3 MiB bodies and send nothing. Each must
// cost the server little memory (its RSS, read from /proc, grows by less
// than rssBudget), answer clean 4xx where it answers, and leave the server
// serving.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// rssBudget bounds how much the server's resident memory may grow under
// one attack. Before the fixes the copy bomb grew it without bound (24 GB,
// then the OOM killer) and the announced bodies by about 1 GB.
const rssBudget = 200 << 20

func serverRSS(t *testing.T, p *serverProc) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
	if err != nil {
		t.Fatalf("reading the server's /proc status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatalf("VmRSS line %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in the server's /proc status")
	return 0
}

func TestHostileBodiesCostLittleMemory(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", srv.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 30 * time.Second
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hc.CloseIdleConnections)
	admin := &caller{t: t, name: "admin", base: cfg.Host, hc: hc}
	admin.allowed("POST", leasePath("default", ""), leaseBody("default", "bomb", "h"), http.StatusCreated)
	before := serverRSS(t, srv)

	// The copy bomb: one 100-byte finalizer, then 40 copies of the whole
	// list into itself (2^40 × 100 bytes if nothing stopped it).
	var ops []string
	ops = append(ops, `{"op":"add","path":"/metadata/labels","value":{"a":"`+strings.Repeat("x", 60)+`"}}`)
	ops = append(ops, `{"op":"add","path":"/metadata/finalizers","value":["example.com/`+strings.Repeat("y", 88)+`"]}`)
	for range 40 {
		ops = append(ops, `{"op":"copy","from":"/metadata/finalizers","path":"/metadata/finalizers/-"}`)
	}
	req, err := http.NewRequest("PATCH", cfg.Host+leasePath("default", "bomb"), strings.NewReader("["+strings.Join(ops, ",")+"]"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json-patch+json")
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("copy bomb: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode < 400 || resp.StatusCode >= 500 {
		t.Errorf("copy bomb answered %d %s, want a 4xx", resp.StatusCode, body)
	}
	t.Logf("copy bomb (%d bytes): %d in %v", len(strings.Join(ops, ",")), resp.StatusCode, time.Since(start).Round(time.Millisecond))
	if grown := serverRSS(t, srv) - before; grown > rssBudget {
		t.Errorf("the copy bomb grew the server's RSS by %d MiB", grown>>20)
	}

	// 600 streams announcing 3 MiB each, sending nothing.
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var writers []*io.PipeWriter
	for range 600 {
		pr, pw := io.Pipe()
		writers = append(writers, pw)
		req, err := http.NewRequestWithContext(ctx, "POST", cfg.Host+leasePath("default", ""), pr)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = 3 << 20
		req.Header.Set("Content-Type", "application/json")
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, err := hc.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
	}
	time.Sleep(3 * time.Second) // every stream open, its body awaited
	grown := serverRSS(t, srv) - before
	t.Logf("600 announced 3 MiB bodies: server RSS grew %d MiB", grown>>20)
	if grown > rssBudget {
		t.Errorf("600 announced-but-empty bodies grew the server's RSS by %d MiB", grown>>20)
	}
	cancel()
	for _, pw := range writers {
		_ = pw.CloseWithError(context.Canceled)
	}
	wg.Wait()

	// Still serving.
	admin.allowed("GET", leasePath("default", "bomb"), "", http.StatusOK)
}
