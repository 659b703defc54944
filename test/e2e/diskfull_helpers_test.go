package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// diskTmpfsSize is the size of the file system the disk-fault tests give
// the server. The store refuses writes while less than its reserve
// (embedded.DefaultReservedBytes, 64 MiB, not a serve flag) is free, and
// a store of a few dozen leases already takes 50 to 75 MiB of a tmpfs:
// pebble preallocates each WAL file (18 MiB here) and keeps recycled ones.
// 192 MiB leaves room for the writes before the fill; the filler then
// takes what is left, down to the last byte.
const diskTmpfsSize = "192m"

// mountTmpfs mounts a tmpfs of size on a fresh directory for the test and
// unmounts it when the test ends, after the server on it has stopped (its
// cleanup, registered later, runs first). Mounting needs root; without it
// the test is skipped, saying so.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size="+size+",mode=0700"); err != nil {
		t.Skipf("SKIPPED: this test needs to mount a %s tmpfs (root or CAP_SYS_ADMIN): mount: %v", size, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmounting the test's tmpfs %s: %v", dir, err)
		}
	})
	return dir
}

// fillDisk appends to path until the file system answers ENOSPC, so that
// not a byte is left free, and returns how many bytes it wrote.
func fillDisk(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatalf("filler file: %v", err)
	}
	defer f.Close()
	var total int64
	// Megabytes first, then pages, so the last crumbs are taken too.
	for _, size := range []int{1 << 20, 4 << 10} {
		buf := make([]byte, size)
		for {
			n, err := f.Write(buf)
			total += int64(n)
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			if err != nil {
				t.Fatalf("filling %s: %v", path, err)
			}
		}
	}
	return total
}

// freeBytes is what statfs says an unprivileged writer may still use
// (the server's measure).
func freeBytes(t *testing.T, dir string) uint64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatalf("statfs %s: %v", dir, err)
	}
	return st.Bavail * uint64(st.Bsize)
}

// rawAdmin sends hand-made requests as the admin kubeconfig's user, so a
// test sees status codes, headers and bodies as the server wrote them
// (client-go would retry a 503 with Retry-After on its own).
type rawAdmin struct {
	base string
	hc   *http.Client
}

func newRawAdmin(t *testing.T, kubeconfig string) *rawAdmin {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("loading %s: %v", kubeconfig, err)
	}
	cfg.Timeout = 20 * time.Second
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatalf("HTTP client: %v", err)
	}
	t.Cleanup(hc.CloseIdleConnections)
	return &rawAdmin{base: cfg.Host, hc: hc}
}

// rawAnswer is one response: its code, Retry-After header and body.
type rawAnswer struct {
	code       int
	retryAfter string
	body       string
}

func (a rawAnswer) String() string {
	return fmt.Sprintf("%d (Retry-After %q) %s", a.code, a.retryAfter, strings.TrimSpace(a.body))
}

// status decodes the body as a Status; ok is false if it is not one.
func (a rawAnswer) status() (st metav1.Status, ok bool) {
	err := json.Unmarshal([]byte(a.body), &st)
	return st, err == nil && st.Kind == "Status"
}

func (r *rawAdmin) do(ctx context.Context, method, path, body string) (rawAnswer, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, rd)
	if err != nil {
		return rawAnswer{}, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.hc.Do(req)
	if err != nil {
		return rawAnswer{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return rawAnswer{}, fmt.Errorf("reading %s %s: %w", method, path, err)
	}
	return rawAnswer{code: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: string(b)}, nil
}

// createProbe creates a new lease (a write no writer tracks) and returns
// the answer.
func (r *rawAdmin) createProbe(ctx context.Context, seq int) (rawAnswer, error) {
	name := fmt.Sprintf("probe-%d-%d", time.Now().UnixNano(), seq)
	return r.do(ctx, http.MethodPost, leasePath(durabilityNamespace, ""), leaseBody(durabilityNamespace, name, "probe"))
}

// readyz is GET /readyz?verbose.
func (r *rawAdmin) readyz(ctx context.Context) (rawAnswer, error) {
	return r.do(ctx, http.MethodGet, "/readyz?verbose", "")
}

// waitFor polls cond every 100 ms until it returns true or d passes; it
// returns how long that took and the last error cond gave.
func waitFor(d time.Duration, cond func() (bool, error)) (time.Duration, error) {
	start := time.Now()
	var last error
	for time.Since(start) < d {
		ok, err := cond()
		if ok {
			return time.Since(start), nil
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(start), fmt.Errorf("not within %v (last: %v)", d, last)
}
