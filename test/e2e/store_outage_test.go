package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/testdeps"
)

// A replica whose etcd stops answering (a frozen member: the look of a lost
// quorum to a client) must not hang its clients or blame itself: /readyz
// fails and names etcd, /livez holds, reads and writes answer 503 with
// Retry-After or 504 Timeout within the per-call deadline or the request
// timeout (--request-timeout, or a client's shorter ?timeout=), and reads
// at resourceVersion=0 keep being served from the watch cache. When etcd
// is back, so is the replica, with every acknowledged write.
func TestStoreOutageAnswersAndRecovers(t *testing.T) {
	etcd := testdeps.StartEtcdCluster(t, 1).Members[0]
	a := startServer(t, "--etcd-servers", etcd.Endpoint)
	b := startServer(t, "--etcd-servers", etcd.Endpoint, "--request-timeout", "2s")
	ra, rb := newRawAdmin(t, a.Kubeconfig), newRawAdmin(t, b.Kubeconfig)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	var acked []string
	for i := range 10 {
		name := fmt.Sprintf("before-%d", i)
		ans, err := ra.do(ctx, http.MethodPost, leasePath(durabilityNamespace, ""), leaseBody(durabilityNamespace, name, "h"))
		if err != nil || ans.code != http.StatusCreated {
			t.Fatalf("create %s: %v %v", name, ans, err)
		}
		acked = append(acked, name)
	}

	etcd.Pause()
	resumed := false
	defer func() {
		if !resumed {
			etcd.Resume()
		}
	}()

	// /readyz fails within the probe's period and timeout, in kube's format.
	took, err := waitFor(15*time.Second, func() (bool, error) {
		ans, err := ra.do(ctx, http.MethodGet, "/readyz", "")
		return err == nil && ans.code == http.StatusInternalServerError &&
			strings.Contains(ans.body, "[+]ping ok\n") && strings.Contains(ans.body, "[-]etcd failed: reason withheld\n") &&
			strings.HasSuffix(ans.body, "readyz check failed\n"), err
	})
	if err != nil {
		ans, _ := ra.do(ctx, http.MethodGet, "/readyz", "")
		t.Fatalf("/readyz did not fail within 15s of etcd stopping: %v (last %v)", err, ans)
	}
	t.Logf("/readyz failed %v after etcd stopped", took)
	if ans, err := ra.readyz(ctx); err != nil || !strings.Contains(ans.body, "[-]etcd failed: reading the current revision: ") {
		t.Errorf("/readyz?verbose during the outage: %v %v, want the reason", ans, err)
	}
	for _, p := range []string{"/livez", "/livez?verbose", "/healthz"} {
		if ans, err := ra.do(ctx, http.MethodGet, p, ""); err != nil || ans.code != http.StatusOK {
			t.Errorf("%s during the outage: %v %v, want 200", p, ans, err)
		}
	}

	lease := leasePath(durabilityNamespace, "before-0")
	// The per-call deadline (5 s) ends a read: nothing was done, retry.
	timedRequest(t, ctx, ra, "consistent get", http.MethodGet, lease, "", 8*time.Second, http.StatusServiceUnavailable)
	timedRequest(t, ctx, ra, "consistent list", http.MethodGet, leasePath(durabilityNamespace, ""), "", 8*time.Second, http.StatusServiceUnavailable)
	// A write: refused (503) or of unknown fate (504), never a 500 or a hang.
	timedRequest(t, ctx, ra, "create", http.MethodPost, leasePath(durabilityNamespace, ""), leaseBody(durabilityNamespace, "during", "h"), 8*time.Second,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout)
	// The client's shorter ?timeout= and the replica's --request-timeout 2s
	// end requests sooner, as kube-apiserver's 504.
	ans := timedRequest(t, ctx, ra, "get ?timeout=1s", http.MethodGet, lease+"?timeout=1s", "", 3*time.Second, http.StatusGatewayTimeout)
	if st, _ := ans.status(); st.Message != "Timeout: request did not complete within requested timeout - context deadline exceeded" {
		t.Errorf("get ?timeout=1s: message %q", st.Message)
	}
	timedRequest(t, ctx, rb, "get with --request-timeout 2s", http.MethodGet, lease, "", 4*time.Second, http.StatusGatewayTimeout)
	// The watch cache still answers reads that accept any version.
	if ans, err := ra.do(ctx, http.MethodGet, lease+"?resourceVersion=0", ""); err != nil || ans.code != http.StatusOK {
		t.Errorf("get at resourceVersion=0 during the outage: %v %v, want 200 from the cache", ans, err)
	}

	etcd.Resume()
	resumed = true
	took, err = waitFor(30*time.Second, func() (bool, error) {
		ans, err := ra.do(ctx, http.MethodGet, "/readyz", "")
		return err == nil && ans.code == http.StatusOK, err
	})
	if err != nil {
		t.Fatalf("/readyz did not recover within 30s of etcd's return: %v", err)
	}
	t.Logf("/readyz recovered %v after etcd's return", took)
	for _, r := range []*rawAdmin{ra, rb} {
		ans, err := r.do(ctx, http.MethodGet, leasePath(durabilityNamespace, ""), "")
		if err != nil || ans.code != http.StatusOK {
			t.Fatalf("list after recovery: %v %v", ans, err)
		}
		var list struct {
			Items []struct {
				Metadata struct{ Name string } `json:"metadata"`
			} `json:"items"`
		}
		if err := json.Unmarshal([]byte(ans.body), &list); err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, it := range list.Items {
			have[it.Metadata.Name] = true
		}
		for _, n := range acked {
			if !have[n] {
				t.Errorf("acknowledged lease %s is missing after the outage", n)
			}
		}
	}
	if ans, err := rb.do(ctx, http.MethodPost, leasePath(durabilityNamespace, ""), leaseBody(durabilityNamespace, "after", "h")); err != nil || ans.code != http.StatusCreated {
		t.Errorf("create after recovery: %v %v", ans, err)
	}
}

// timedRequest runs one request and checks that its answer came within
// limit, is a Status with one of the codes in want, and, for a 503, has
// Retry-After 1 and reason ServiceUnavailable, or, for a 504, reason
// Timeout: how a replica answers while its store is unreachable. It may be
// called from several goroutines at once (it reports with t.Errorf).
func timedRequest(t *testing.T, ctx context.Context, r *rawAdmin, what, method, path, body string, limit time.Duration, want ...int) rawAnswer {
	t.Helper()
	start := time.Now()
	ans, err := r.do(ctx, method, path, body)
	took := time.Since(start)
	if err != nil {
		t.Errorf("%s: %v after %v", what, err, took)
		return ans
	}
	checkOutageAnswer(t, what, ans, took, limit, want...)
	return ans
}

// checkOutageAnswer is timedRequest's check of an answer that took took.
func checkOutageAnswer(t *testing.T, what string, ans rawAnswer, took, limit time.Duration, want ...int) {
	t.Helper()
	st, ok := ans.status()
	good := false
	for _, w := range want {
		good = good || ans.code == w
	}
	if !ok || !good || took > limit {
		t.Errorf("%s: %v after %v; want one of %v as a Status within %v", what, ans, took, want, limit)
	}
	switch {
	case ans.code == http.StatusServiceUnavailable && (ans.retryAfter != "1" || st.Reason != metav1.StatusReasonServiceUnavailable):
		t.Errorf("%s: %v; want Retry-After 1 and reason ServiceUnavailable", what, ans)
	case ans.code == http.StatusGatewayTimeout && st.Reason != metav1.StatusReasonTimeout:
		t.Errorf("%s: %v; want reason Timeout", what, ans)
	}
	t.Logf("%s: %d after %v", what, ans.code, took.Round(time.Millisecond))
}
