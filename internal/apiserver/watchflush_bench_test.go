package apiserver_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/internal/apiserver"
)

// BenchmarkWatchDelivery measures what a watcher of a busy fleet's leases
// pays to receive each renewal: a client-go watch (protobuf, HTTP/2, TLS)
// of a namespace whose 200 leases are renewed 2,000 times a second, one at
// a time as a fleet's renewals arrive. reads/event is the watcher's socket
// reads per event; cpu-µs/event is the whole process's (server, renewals
// and watcher) CPU per event. flush-every-event is kube-apiserver's way
// (and Leasehold's before DefaultWatchFlushInterval); paced is the default.
func BenchmarkWatchDelivery(b *testing.B) {
	b.Run("flush-every-event", func(b *testing.B) { benchWatchDelivery(b, -1) })
	b.Run("paced", func(b *testing.B) { benchWatchDelivery(b, 0) })
}

func benchWatchDelivery(b *testing.B, interval time.Duration) {
	h := newDirectHandler(b, func(c *apiserver.Config) { c.WatchFlushInterval = interval })
	pb := protobuf.NewSerializer(h.scheme, h.scheme)
	const ns, leases = "kube-node-lease", 200
	createNamespace(b, h.api, ns)
	cached := make([]*coordinationv1.Lease, leases)
	for i := range cached {
		l := &coordinationv1.Lease{
			TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%03d", i), Namespace: ns},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("n"), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &metav1.MicroTime{Time: time.Now()}},
		}
		cached[i] = renewOnce(b, h.api, pb, http.MethodPost, "/apis/coordination.k8s.io/v1/namespaces/"+ns+"/leases", l, http.StatusCreated)
	}

	srv := httptest.NewUnstartedServer(h.api)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	b.Cleanup(srv.Close)
	var reads atomic.Int64
	cfg := &rest.Config{
		Host:            srv.URL,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		ContentConfig:   rest.ContentConfig{ContentType: "application/vnd.kubernetes.protobuf"},
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countingConn{Conn: c, reads: &reads}, nil
		},
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w, err := client.CoordinationV1().Leases(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: cached[leases-1].ResourceVersion})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Stop()

	b.ResetTimer()
	cpuStart, readStart := processCPU(b), reads.Load()
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		// 2,000 renewals a second: two every millisecond.
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for n := 0; n < b.N; {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			for range 2 {
				if n == b.N {
					break
				}
				l := cached[n%leases]
				l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
				l.TypeMeta = metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"}
				cached[n%leases] = renewOnce(b, h.api, pb, http.MethodPut, "/apis/coordination.k8s.io/v1/namespaces/"+ns+"/leases/"+l.Name, l, http.StatusOK)
				n++
			}
		}
	}()
	timeout := time.After(time.Duration(b.N)*time.Millisecond + 30*time.Second)
	for got := 0; got < b.N; {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				b.Fatalf("watch ended after %d of %d events", got, b.N)
			}
			if _, isLease := ev.Object.(*coordinationv1.Lease); !isLease {
				b.Fatalf("event %d: %s %T", got, ev.Type, ev.Object)
			}
			got++
		case <-timeout:
			b.Fatalf("%d of %d events delivered", got, b.N)
		}
	}
	b.StopTimer()
	<-writerDone
	b.ReportMetric(float64(reads.Load()-readStart)/float64(b.N), "reads/event")
	b.ReportMetric(float64((processCPU(b)-cpuStart).Microseconds())/float64(b.N), "cpu-µs/event")
}

// countingConn counts the reads made on a connection.
type countingConn struct {
	net.Conn
	reads *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	c.reads.Add(1)
	return c.Conn.Read(p)
}
