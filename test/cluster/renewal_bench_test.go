package cluster

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/bench"
	"github.com/leasehold/leasehold/internal/testdeps/kubecluster"
)

// Renewal load of BenchmarkRenewalsThroughKubeAPIServer: benchNodes
// leases renewed every benchInterval through kube-apiserver, measured for
// benchDuration.
const (
	benchNodes    = 2000
	benchInterval = 2 * time.Second
	benchDuration = 40 * time.Second
)

// BenchmarkRenewalsThroughKubeAPIServer measures what moving the leases
// off etcd saves: the same renewals through one kube-apiserver, first with
// coordination.k8s.io/v1 served from its etcd (the built-in storage), then
// routed to Leasehold, in the same session on the same processes. Each
// sub-benchmark reports per renewal the CPU of kube-apiserver, etcd and
// Leasehold, etcd's puts, and the renewals' latency. It ignores b.N: one
// fixed-rate run is one measurement (run with -benchtime 1x).
//
//	go test ./test/cluster -run '^$' -bench RenewalsThroughKubeAPIServer -benchtime 1x -timeout 20m
//
// kube-controller-manager is not started, so that its informers' share of
// kube-apiserver's CPU does not blur the comparison; the load generator
// renews as the cluster's admin (system:masters), which kube-apiserver
// authorizes without RBAC, the same way in both configurations.
func BenchmarkRenewalsThroughKubeAPIServer(b *testing.B) {
	kc := kubecluster.Start(b, kubecluster.Options{})
	var lh *behind
	for _, where := range []string{"etcd", "leasehold"} {
		b.Run("leases="+where, func(b *testing.B) {
			pids := map[string]int{"kube-apiserver": kc.APIServerPID(), "etcd": kc.EtcdPID()}
			if where == "leasehold" {
				// No audit log: kube-apiserver writes none either.
				lh = startLeaseholdFor(b, kc, false)
				lh.route()
				pids["leasehold"] = lh.serve.Pid()
			}
			// The first run creates the leases; the measured one renews them.
			runRate(b, kc, 5*time.Second)
			before := cpuOf(b, pids)
			putsBefore := etcdPuts(b, kc)
			res := runRate(b, kc, benchDuration)
			after := cpuOf(b, pids)
			puts := etcdPuts(b, kc) - putsBefore
			ops := float64(res.Ops)
			if ops == 0 {
				b.Fatalf("no renewals: %+v", res)
			}
			for name := range pids {
				b.ReportMetric((after[name]-before[name])*1e6/ops, name+"-cpu-µs/renewal")
			}
			b.ReportMetric(puts/ops, "etcd-puts/renewal")
			b.ReportMetric(puts/res.ElapsedSeconds, "etcd-puts/s")
			b.ReportMetric(res.Throughput, "renewals/s")
			b.ReportMetric(res.P50Ms, "p50-ms")
			b.ReportMetric(res.P99Ms, "p99-ms")
			b.ReportMetric(float64(res.ErrorsTotal), "errors")
		})
	}
}

// runRate runs `leasehold bench rate` through kube-apiserver and returns
// its result.
func runRate(b *testing.B, kc *kubecluster.Cluster, d time.Duration) bench.Result {
	b.Helper()
	p := startProc(b, "bench-rate", "bench", "rate", "--kubeconfig", kc.AdminKubeconfig,
		"--nodes", strconv.Itoa(benchNodes), "--interval", benchInterval.String(), "--clients", "64",
		"--duration", d.String(), "--output", "json")
	deadline := time.Now().Add(d + 2*time.Minute)
	for {
		select {
		case <-p.Exited():
			return benchResult(b, p)
		case <-time.After(time.Until(deadline)):
			b.Fatalf("bench rate did not finish within %v", d+2*time.Minute)
		}
	}
}

// cpuOf reads the CPU seconds (user and system) each process used so far.
func cpuOf(b *testing.B, pids map[string]int) map[string]float64 {
	b.Helper()
	out := map[string]float64{}
	for name, pid := range pids {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		// Fields after the command (which may hold spaces) start after ")".
		f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
		utime, _ := strconv.ParseFloat(f[11], 64)
		stime, _ := strconv.ParseFloat(f[12], 64)
		out[name] = (utime + stime) / 100 // USER_HZ
	}
	return out
}

// etcdPuts is etcd's count of puts (its writes, transactions' included).
func etcdPuts(b *testing.B, kc *kubecluster.Cluster) float64 {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, kc.EtcdURL+"/metrics", nil)
	if err != nil {
		b.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatalf("etcd metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		for _, name := range []string{"etcd_mvcc_put_total ", "etcd_debugging_mvcc_put_total "} {
			if v, ok := strings.CutPrefix(line, name); ok {
				n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					b.Fatalf("etcd metric %q: %v", line, err)
				}
				return n
			}
		}
	}
	b.Fatalf("etcd reports no put counter")
	return 0
}
