package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// durabilityNamespace holds every lease the durability tests write; the
// server creates it at start.
const durabilityNamespace = "default"

// leaseClients are a JSON and a protobuf clientset on one server, as
// kubectl-like tools and kubelets/controllers talk.
type leaseClients struct {
	json, proto kubernetes.Interface
	http        []*http.Client
}

// newLeaseClients builds both clients from the server's admin kubeconfig.
// The connections are closed when the test ends (goleak checks that).
func newLeaseClients(t *testing.T, kubeconfig string) *leaseClients {
	t.Helper()
	base, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("loading %s: %v", kubeconfig, err)
	}
	base.QPS, base.Burst = -1, 0
	base.Timeout = 20 * time.Second
	proto := rest.CopyConfig(base)
	proto.ContentType = "application/vnd.kubernetes.protobuf"
	proto.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	c := &leaseClients{}
	for i, cfg := range []*rest.Config{base, proto} {
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatalf("HTTP client: %v", err)
		}
		cs, err := kubernetes.NewForConfigAndClient(cfg, hc)
		if err != nil {
			t.Fatalf("clientset: %v", err)
		}
		c.http = append(c.http, hc)
		if i == 0 {
			c.json = cs
		} else {
			c.proto = cs
		}
	}
	t.Cleanup(c.closeIdle)
	return c
}

// closeIdle drops pooled connections so no transport goroutine outlives
// the server they talked to.
func (c *leaseClients) closeIdle() {
	for _, hc := range c.http {
		hc.CloseIdleConnections()
	}
}

// pick returns the protobuf client for odd i and the JSON one for even i.
func (c *leaseClients) pick(i int) kubernetes.Interface {
	if i%2 == 1 {
		return c.proto
	}
	return c.json
}

// leaseValue is the content a write gave a lease: the holder is unique per
// write, so two values are the same write exactly when they are equal.
type leaseValue struct {
	holder string
	renew  time.Time
}

func valueOf(l *coordinationv1.Lease) leaseValue {
	v := leaseValue{}
	if l.Spec.HolderIdentity != nil {
		v.holder = *l.Spec.HolderIdentity
	}
	if l.Spec.RenewTime != nil {
		v.renew = l.Spec.RenewTime.UTC()
	}
	return v
}

func (v leaseValue) equal(o leaseValue) bool { return v.holder == o.holder && v.renew.Equal(o.renew) }

func (v leaseValue) String() string {
	return fmt.Sprintf("holder=%q renew=%s", v.holder, v.renew.Format(time.RFC3339Nano))
}

// leaseLedger is what one writer knows about one of its leases. Only that
// writer touches it while writing; the test reads it after the writers end.
type leaseLedger struct {
	name string
	// acked is the last acknowledged write and ackedRV its resourceVersion;
	// hasAck is false until a create was acknowledged.
	hasAck  bool
	acked   leaseValue
	ackedRV int64
	// pending is a write that was sent but got no answer (the server died
	// under it): after restart it may or may not be there.
	hasPending bool
	pending    leaseValue
	// obj is the last stored object, the base of the next update.
	obj *coordinationv1.Lease
}

// ackedWrite is one acknowledged write, for the watch replay check.
type ackedWrite struct {
	name string
	rv   int64
}

// leaseWriter creates and updates its own leases (no two writers share a
// lease, so every conflict or lost write is the server's fault).
type leaseWriter struct {
	id     int
	rng    *rand.Rand
	seq    int
	leases []*leaseLedger
	// round holds this round's acknowledged writes, in order.
	round []ackedWrite
}

func newLeaseWriter(id, leases int, seed uint64) *leaseWriter {
	w := &leaseWriter{id: id, rng: rand.New(rand.NewPCG(seed, uint64(id)))}
	for k := range leases {
		w.leases = append(w.leases, &leaseLedger{name: fmt.Sprintf("dur-w%02d-%d", id, k)})
	}
	return w
}

// run writes until ctx ends. An error while the server is up (stopping is
// false) is a failure; once the test has started stopping the server, the
// write in flight is recorded as pending and the writer ends.
func (w *leaseWriter) run(ctx context.Context, cs kubernetes.Interface, stopping *atomic.Bool) error {
	leases := cs.CoordinationV1().Leases(durabilityNamespace)
	for ctx.Err() == nil {
		l := w.leases[w.rng.IntN(len(w.leases))]
		w.seq++
		v := leaseValue{
			holder: fmt.Sprintf("w%02d-%d", w.id, w.seq),
			renew:  time.Now().UTC().Truncate(time.Microsecond),
		}
		l.hasPending, l.pending = true, v
		var got *coordinationv1.Lease
		var err error
		if l.obj == nil {
			got, err = leases.Create(ctx, &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: l.name},
				Spec:       specFor(v, 0),
			}, metav1.CreateOptions{})
		} else {
			obj := l.obj.DeepCopy()
			obj.Spec = specFor(v, ptr.Deref(obj.Spec.LeaseTransitions, 0)+1)
			got, err = leases.Update(ctx, obj, metav1.UpdateOptions{})
		}
		if err != nil {
			if stopping.Load() || ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("writer %d: write %s of %s while the server was up: %w", w.id, v, l.name, err)
		}
		rv, err := strconv.ParseInt(got.ResourceVersion, 10, 64)
		if err != nil {
			return fmt.Errorf("writer %d: %s answered resourceVersion %q: %w", w.id, l.name, got.ResourceVersion, err)
		}
		if gv := valueOf(got); !gv.equal(v) {
			return fmt.Errorf("writer %d: %s answered %s for the write of %s", w.id, l.name, gv, v)
		}
		if l.hasAck && rv <= l.ackedRV {
			return fmt.Errorf("writer %d: %s went from resourceVersion %d to %d", w.id, l.name, l.ackedRV, rv)
		}
		l.hasAck, l.acked, l.ackedRV, l.hasPending, l.obj = true, v, rv, false, got
		w.round = append(w.round, ackedWrite{name: l.name, rv: rv})
	}
	return nil
}

func specFor(v leaseValue, transitions int32) coordinationv1.LeaseSpec {
	return coordinationv1.LeaseSpec{
		HolderIdentity:       ptr.To(v.holder),
		LeaseDurationSeconds: ptr.To[int32](15),
		RenewTime:            &metav1.MicroTime{Time: v.renew},
		LeaseTransitions:     ptr.To(transitions),
	}
}
