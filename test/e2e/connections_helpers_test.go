package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// adminClient is a client-go client with the server's admin kubeconfig and
// its own connection.
func adminClient(t testing.TB, srv *serverProc) (*rest.Config, kubernetes.Interface) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", srv.Kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	cfg.QPS, cfg.Burst = -1, 0
	cfg.Timeout = 10 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	return cfg, cs
}

// adminTLS is the admin kubeconfig's TLS configuration, for hand-made
// HTTP/2 connections.
func adminTLS(t testing.TB, cfg *rest.Config) *tls.Config {
	t.Helper()
	tc, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatalf("TLS config: %v", err)
	}
	tc.NextProtos = []string{"h2"}
	return tc
}

// renewer renews leases with client-go, as kubelets do, and records every
// renewal's latency and failure until stopped.
type renewer struct {
	stop chan struct{}
	wg   sync.WaitGroup

	mu        sync.Mutex
	latencies []time.Duration
	failures  []error
}

// startRenewers runs n goroutines, each renewing its own lease every pause.
func startRenewers(t testing.TB, cs kubernetes.Interface, name string, n int, pause time.Duration) *renewer {
	t.Helper()
	r := &renewer{stop: make(chan struct{})}
	ctx := context.Background()
	for i := range n {
		lease, err := cs.CoordinationV1().Leases("default").Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i)},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: &name},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating lease: %v", err)
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			for {
				select {
				case <-r.stop:
					return
				case <-time.After(pause):
				}
				lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
				start := time.Now()
				updated, err := cs.CoordinationV1().Leases("default").Update(ctx, lease, metav1.UpdateOptions{})
				took := time.Since(start)
				r.mu.Lock()
				if err != nil {
					r.failures = append(r.failures, err)
				} else {
					r.latencies = append(r.latencies, took)
					lease = updated
				}
				r.mu.Unlock()
			}
		}()
	}
	t.Cleanup(r.Stop)
	return r
}

// Stop ends the renewals (idempotent).
func (r *renewer) Stop() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	r.wg.Wait()
}

// counts returns how many renewals succeeded and failed so far.
func (r *renewer) counts() (ok, failed int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.latencies), len(r.failures)
}

// take returns the latencies recorded so far and forgets them.
func (r *renewer) take() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.latencies
	r.latencies = nil
	return l
}

// quantile is the q-quantile of the successful renewals' latencies.
func (r *renewer) quantile(q float64) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return quantileOf(r.latencies, q)
}

// quantileOf is the q-quantile of latencies (0 if there are none).
func quantileOf(latencies []time.Duration, q float64) time.Duration {
	if len(latencies) == 0 {
		return 0
	}
	s := slices.Clone(latencies)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// metricSum scrapes /metrics with cs and sums the samples of name whose
// labels contain every one of labels ("reason=\"rapid_reset\"").
func metricSum(t testing.TB, cs kubernetes.Interface, name string, labels ...string) float64 {
	t.Helper()
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("scraping /metrics: %v", err)
	}
	var sum float64
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		matches := true
		for _, l := range labels {
			matches = matches && strings.Contains(line, l)
		}
		if !matches {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}
