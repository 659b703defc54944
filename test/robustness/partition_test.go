package robustness

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// The partition fault (etcd mode): a replica cut off from etcd while its
// clients still reach it. Each replica reaches the members only through
// proxies of its own (proxy_test.go); the fault cuts one replica's
// proxies for a random time, either resetting every connection and every
// new one (faultEtcdCut) or blackholing them (faultEtcdBlackhole), then
// restores them. The replica's traffic clients and watchers go on the
// whole time and every check holds as for any fault; a probe client of
// its own meanwhile measures what a client of the cut replica gets.
const (
	faultEtcdCut       = "replica cut off from etcd (connections reset)"
	faultEtcdBlackhole = "replica cut off from etcd (blackholed)"
)

const (
	// probeNamespace holds the probe's Leases, outside the namespace the
	// histories and watches cover.
	probeNamespace = "robustness-probe"
	// recoveryTimeout bounds how long after its link is restored a
	// replica may take to answer a consistent read and a write again;
	// longer is a violation (a replica that stays cut off by itself).
	recoveryTimeout = 30 * time.Second
	// probeGap is the probe's pause between two requests of one kind.
	probeGap = 50 * time.Millisecond
)

// etcdLink is one replica's way to the etcd members, a proxy per member,
// and the client the probe uses on that replica.
type etcdLink struct {
	replica int
	proxies []*proxy
	probe   kubernetes.Interface
}

// newEtcdLink starts a proxy to each member for replica.
func newEtcdLink(t *testing.T, members []*etcdMember, replica int) *etcdLink {
	t.Helper()
	l := &etcdLink{replica: replica}
	for _, m := range members {
		l.proxies = append(l.proxies, startProxy(t, m.endpoint))
	}
	return l
}

// endpoints is the replica's --etcd-servers.
func (l *etcdLink) endpoints() string {
	eps := make([]string, len(l.proxies))
	for i, p := range l.proxies {
		eps[i] = p.endpoint()
	}
	return strings.Join(eps, ",")
}

func (l *etcdLink) leaseName() string { return fmt.Sprintf("replica-%d", l.replica) }

// attach gives the link its probe client on srv, the replica it serves,
// and creates the probe's namespace and Lease.
func (l *etcdLink) attach(t *testing.T, srv *server) *etcdLink {
	t.Helper()
	c, closeC := newClient(t, srv)
	t.Cleanup(closeC)
	l.probe = c
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: probeNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create the probe's namespace: %v", err)
	}
	if _, err := c.CoordinationV1().Leases(probeNamespace).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: l.leaseName()}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create the probe's Lease: %v", err)
	}
	return l
}

// draw picks the next fault kind: kinds are dealt from a shuffled deck,
// dealt again once it is empty, so that each kind comes once in every
// len(kinds) faults. A uniform draw of the small etcd run's eight or so
// faults among six kinds would leave some kind out of about half the
// runs.
func (in *injector) draw(kinds []string) string {
	if len(in.deck) == 0 {
		in.deck = append([]string(nil), kinds...)
		in.rng.Shuffle(len(in.deck), func(i, j int) { in.deck[i], in.deck[j] = in.deck[j], in.deck[i] })
	}
	kind := in.deck[0]
	in.deck = in.deck[1:]
	return kind
}

// cut cuts srv's link to etcd for a random time while the probe measures
// what the replica answers, restores it, and waits until the replica
// answers a consistent read and a write again (a violation after
// recoveryTimeout).
func (in *injector) cut(kind string, srv *server) (time.Duration, error) {
	l := in.links[srv]
	if l == nil {
		return 0, fmt.Errorf("%s: the server on %s has no etcd link", kind, srv.addr())
	}
	mode := linkDropped
	if kind == faultEtcdBlackhole {
		mode = linkBlackholed
	}
	maxCut := in.plan.MaxCut
	if maxCut == 0 {
		maxCut = in.plan.MaxPause
	}
	d := in.between(500*time.Millisecond, maxCut)
	at := in.h.now()
	pr := l.startProbe()
	cutAt := time.Now()
	for _, p := range l.proxies {
		p.cut(mode)
	}
	time.Sleep(d)
	for _, p := range l.proxies {
		p.restore()
	}
	restoredAt := time.Now()
	recovered := pr.finish(restoredAt, recoveryTimeout)
	report := pr.report(cutAt, restoredAt)
	in.mu.Lock()
	defer in.mu.Unlock()
	in.log = append(in.log, fmt.Sprintf("%.3fs replica %d: %s for %v: %s", float64(at)/1e9, l.replica, kind, d.Round(time.Millisecond), report))
	if !recovered {
		in.crashes = append(in.crashes, fmt.Sprintf("replica %d (%s) did not answer both a consistent read and a write within %v of its link to etcd coming back after %s at %.3fs: %s",
			l.replica, srv.addr(), recoveryTimeout, kind, float64(at)/1e9, report))
	}
	return d, nil
}

// probe sends, on a replica, a consistent GET and a merge patch of its
// Lease one after another (each kind on its own goroutine) and records
// every answer. Each loop ends at the first success returned after the
// link was restored, or when stopped.
type probe struct {
	stop chan struct{}
	wg   sync.WaitGroup

	mu         sync.Mutex
	samples    []probeSample
	restoredAt time.Time // zero until the link is back
}

// probeSample is one probe request.
type probeSample struct {
	Write     bool
	Call, Ret time.Time
	// Answer is the HTTP status code, "no answer" (the client's own
	// opTimeout passed) or "connection error".
	Answer string
}

func (l *etcdLink) startProbe() *probe {
	pr := &probe{stop: make(chan struct{})}
	// The REST client's requests, without client-go's retries: a 503
	// carries a Retry-After, which client-go obeys up to ten times, and
	// the probe is after what the server answers.
	rc := l.probe.CoordinationV1().RESTClient()
	name := l.leaseName()
	read := func(ctx context.Context) error {
		return rc.Get().Namespace(probeNamespace).Resource("leases").Name(name).MaxRetries(0).Do(ctx).Error()
	}
	n := 0
	write := func(ctx context.Context) error {
		n++
		patch := fmt.Sprintf(`{"spec":{"holderIdentity":"probe-%d"}}`, n)
		return rc.Patch(types.MergePatchType).Namespace(probeNamespace).Resource("leases").Name(name).Body([]byte(patch)).MaxRetries(0).Do(ctx).Error()
	}
	pr.wg.Add(2)
	go pr.loop(false, read)
	go pr.loop(true, write)
	return pr
}

func (pr *probe) loop(write bool, op func(context.Context) error) {
	defer pr.wg.Done()
	for {
		call := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		err := op(ctx)
		cancel()
		s := probeSample{Write: write, Call: call, Ret: time.Now(), Answer: answerOf(err)}
		pr.mu.Lock()
		pr.samples = append(pr.samples, s)
		back := !pr.restoredAt.IsZero() && err == nil && s.Ret.After(pr.restoredAt)
		pr.mu.Unlock()
		if back {
			return
		}
		select {
		case <-pr.stop:
			return
		case <-time.After(probeGap):
		}
	}
}

// answerOf names what a request got.
func answerOf(err error) string {
	var status apierrors.APIStatus
	switch {
	case err == nil:
		return "200"
	case errors.As(err, &status):
		return strconv.Itoa(int(status.Status().Code))
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer"
	}
	return "connection error"
}

// finish tells the probe the link is back at restoredAt and waits until
// both loops got an answer after it, for at most timeout; it reports
// whether they did. The loops have ended when it returns.
func (pr *probe) finish(restoredAt time.Time, timeout time.Duration) bool {
	pr.mu.Lock()
	pr.restoredAt = restoredAt
	pr.mu.Unlock()
	done := make(chan struct{})
	go func() { pr.wg.Wait(); close(done) }() // ends with the loops, which stop below at the latest
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-done:
		return true
	case <-timer.C:
		close(pr.stop)
		<-done
		return false
	}
}

// report says, for reads and for writes, what the requests made during
// the cut got and the longest of them took, and how long after the link
// came back the first success returned.
func (pr *probe) report(cutAt, restoredAt time.Time) string {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	var parts []string
	for _, write := range []bool{false, true} {
		counts := map[string]int{}
		var longest time.Duration
		back := "never answered again"
		for _, s := range pr.samples {
			if s.Write != write {
				continue
			}
			if !s.Call.Before(cutAt) && s.Call.Before(restoredAt) {
				a := s.Answer
				if a == "200" && s.Ret.After(restoredAt) {
					a = "200 once back"
				}
				counts[a]++
				longest = max(longest, s.Ret.Sub(s.Call))
			}
			if s.Answer == "200" && s.Ret.After(restoredAt) && back == "never answered again" {
				back = "answered again " + s.Ret.Sub(restoredAt).Round(time.Millisecond).String() + " after the link came back"
			}
		}
		parts = append(parts, fmt.Sprintf("%s got %s (longest %v), %s", probeKind(write), countsString(counts), longest.Round(time.Millisecond), back))
	}
	return strings.Join(parts, "; ")
}

// probeKind names the probe's reads or writes.
func probeKind(write bool) string {
	if write {
		return "writes"
	}
	return "reads"
}

// countsString lists answers and how many times each came, sorted.
func countsString(counts map[string]int) string {
	answers := make([]string, 0, len(counts))
	for a, n := range counts {
		answers = append(answers, fmt.Sprintf("%s x%d", a, n))
	}
	sort.Strings(answers)
	return strings.Join(answers, ", ")
}
