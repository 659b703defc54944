package apiserver_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/leasehold/leasehold/internal/server/servertest"
)

// A watcher that never reads is dropped by its timeoutSeconds even while
// the server is blocked writing to it: write deadlines end the write, the
// stream and the watcher (before, it stayed until its connection closed).
func TestWatchTimeoutDropsAWatcherThatNeverReads(t *testing.T) {
	srv := servertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tlsCfg, err := rest.TLSConfigFor(srv.Config)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg.NextProtos = []string{"http/1.1"}
	conn, err := tls.Dial("tcp", srv.Addr, tlsCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	start := time.Now()
	if _, err := fmt.Fprintf(conn, "GET /apis/coordination.k8s.io/v1/namespaces/default/leases?watch=1&timeoutSeconds=2 HTTP/1.1\r\nHost: %s\r\nAccept: application/json\r\n\r\n", srv.Addr); err != nil {
		t.Fatal(err)
	}
	watchers := func() string {
		body, err := srv.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(line, `apiserver_registered_watchers{group="coordination.k8s.io",resource="leases"}`) {
				return line[strings.LastIndexByte(line, ' ')+1:]
			}
		}
		return "0"
	}
	for watchers() != "1" {
		if time.Since(start) > 10*time.Second {
			t.Fatal("the watch did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Far more events than the socket buffers hold, so the server's write
	// blocks on the client that does not read.
	big := strings.Repeat("x", 200<<10)
	for i := 0; i < 60 && time.Since(start) < 2*time.Second; i++ {
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("big-%d", i), Annotations: map[string]string{"pad": big}}}
		if _, err := srv.Client.CoordinationV1().Leases("default").Create(ctx, l, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for watchers() != "0" {
		if time.Since(start) > 8*time.Second {
			t.Fatalf("a non-reading watcher with timeoutSeconds=2 still open after %v", time.Since(start))
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("dropped after %v", time.Since(start))
}
