package leasecopy

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestProgressLines: a first pass over 2,500 leases, slowed to one worker
// so that it lasts seconds, prints progress lines (each after at least a
// second and 1,000 leases since the last) and copies every lease.
func TestProgressLines(t *testing.T) {
	src, dst := startPair(t)
	const n = 2500
	ctx := ctxFor(t, time.Minute)
	if _, err := src.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < n; i += 16 {
				l := nodeLease(fmt.Sprintf("node-%04d", i), time.Now())
				l.Namespace = "fleet"
				if _, err := src.Client.CoordinationV1().Leases("fleet").Create(ctx, l, metav1.CreateOptions{}); err != nil {
					t.Errorf("creating lease %d: %v", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	start := time.Now()
	out, code := runCopy(t, "--workers", "1", "-n", "fleet", "--from-kubeconfig", src.Kubeconfig, "--to-kubeconfig", dst.Kubeconfig)
	took := time.Since(start)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("copied %d, updated 0, unchanged 0, target newer 0, deleted 0, errors 0", n)) {
		t.Fatalf("exit %d, want every lease copied:\n%s", code, out)
	}
	progress := regexp.MustCompile(`(?m)^\d+s: copied \d+, updated \d+, unchanged \d+, target newer \d+, deleted \d+, errors \d+, \d+ queued$`).FindAllString(out, -1)
	if len(progress) == 0 && took > 3*time.Second {
		t.Errorf("a %v first pass over %d leases printed no progress line:\n%s", took, n, out)
	}
	if max := n / 1000; len(progress) > max {
		t.Errorf("%d progress lines for %d leases, want at most %d:\n%s", len(progress), n, max, out)
	}
	list, err := dst.Client.CoordinationV1().Leases("fleet").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != n {
		t.Fatalf("target has %d leases in fleet (%v), want %d", len(list.Items), err, n)
	}
	t.Logf("first pass over %d leases with one worker took %v:\n%s", n, took, out)
}
