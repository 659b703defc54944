package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// faultLease is what a faultWriter knows of one of its leases: the last
// acknowledged write, and the writes sent since that got an error. Any of
// those may still land: a batch whose sync failed can reach the disk, and
// the store publishes it when it reopens.
type faultLease struct {
	name    string
	obj     *coordinationv1.Lease // base of the next update; nil: create
	hasAck  bool
	acked   leaseValue
	ackedRV int64
	tried   []leaseValue
}

// faultWriter creates and updates its own leases through a disk fault:
// a refused write (a status in refusable) is counted and the writer goes
// on; a conflict means a refused write landed after all, and the writer
// reads the lease back and checks it is that write. Anything else ends it
// with an error.
type faultWriter struct {
	id     int
	rng    *rand.Rand
	seq    int
	leases []*faultLease

	acks atomic.Int64
	// refused counts refusals by status code; written by the writer,
	// read after it ended.
	refused map[int32]int
}

func newFaultWriters(n, leases int, seed uint64) []*faultWriter {
	ws := make([]*faultWriter, n)
	for i := range ws {
		w := &faultWriter{id: i, rng: rand.New(rand.NewPCG(seed, uint64(i))), refused: map[int32]int{}}
		for k := range leases {
			w.leases = append(w.leases, &faultLease{name: fmt.Sprintf("fault-w%02d-%d", i, k)})
		}
		ws[i] = w
	}
	return ws
}

// run writes until ctx ends; refusable reports whether a status code is an
// acceptable refusal of a write.
func (w *faultWriter) run(ctx context.Context, cs kubernetes.Interface, refusable func(int32) bool) error {
	leases := cs.CoordinationV1().Leases(durabilityNamespace)
	for ctx.Err() == nil {
		l := w.leases[w.rng.IntN(len(w.leases))]
		w.seq++
		v := leaseValue{holder: fmt.Sprintf("f%02d-%d", w.id, w.seq), renew: time.Now().UTC().Truncate(time.Microsecond)}
		var got *coordinationv1.Lease
		var err error
		if l.obj == nil {
			got, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: l.name}, Spec: specFor(v, 0)}, metav1.CreateOptions{})
		} else {
			obj := l.obj.DeepCopy()
			obj.Spec = specFor(v, ptr.Deref(obj.Spec.LeaseTransitions, 0)+1)
			got, err = leases.Update(ctx, obj, metav1.UpdateOptions{})
		}
		if err == nil {
			if err := l.acknowledge(got, v); err != nil {
				return fmt.Errorf("writer %d: %w", w.id, err)
			}
			w.acks.Add(1)
			continue
		}
		// A write the test cancelled may have landed too.
		l.tried = append(l.tried, v)
		if ctx.Err() != nil {
			return nil
		}
		var code int32
		if st, ok := err.(apierrors.APIStatus); ok {
			code = st.Status().Code
		}
		switch {
		case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err):
			if _, err := l.check(ctx, cs); err != nil {
				return fmt.Errorf("writer %d after a conflict: %w", w.id, err)
			}
		case refusable(code):
			w.refused[code]++
			// A full disk refuses at once: do not spin.
			time.Sleep(20 * time.Millisecond)
		default:
			return fmt.Errorf("writer %d: write %s of %s: %w", w.id, v, l.name, err)
		}
	}
	return nil
}

// acknowledge records an acknowledged write of v that answered got.
func (l *faultLease) acknowledge(got *coordinationv1.Lease, v leaseValue) error {
	rv, err := strconv.ParseInt(got.ResourceVersion, 10, 64)
	if err != nil {
		return fmt.Errorf("%s answered resourceVersion %q: %w", l.name, got.ResourceVersion, err)
	}
	if gv := valueOf(got); !gv.equal(v) {
		return fmt.Errorf("%s answered %s for the write of %s", l.name, gv, v)
	}
	if l.hasAck && rv <= l.ackedRV {
		return fmt.Errorf("%s went from resourceVersion %d to %d", l.name, l.ackedRV, rv)
	}
	l.hasAck, l.acked, l.ackedRV, l.obj, l.tried = true, v, rv, got, nil
	return nil
}

// check reads the lease back and checks it holds the acknowledged write or
// a later one of the writes that got an error (which then becomes the base
// of the next write); a lease never acknowledged may be absent. It returns
// whether an unacknowledged write landed.
func (l *faultLease) check(ctx context.Context, cs kubernetes.Interface) (landed bool, err error) {
	got, err := cs.CoordinationV1().Leases(durabilityNamespace).Get(ctx, l.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err) && l.hasAck:
		return false, fmt.Errorf("acknowledged write %s (rv %d) of %s lost: the lease is gone", l.acked, l.ackedRV, l.name)
	case apierrors.IsNotFound(err):
		l.obj = nil
		return false, nil
	case err != nil:
		return false, fmt.Errorf("get %s: %w", l.name, err)
	}
	rv, err := strconv.ParseInt(got.ResourceVersion, 10, 64)
	if err != nil {
		return false, fmt.Errorf("%s: resourceVersion %q: %w", l.name, got.ResourceVersion, err)
	}
	v := valueOf(got)
	switch {
	case l.hasAck && rv == l.ackedRV && v.equal(l.acked):
		l.obj = got
		return false, nil
	case (!l.hasAck || rv > l.ackedRV) && slices.ContainsFunc(l.tried, v.equal):
		l.hasAck, l.acked, l.ackedRV, l.obj, l.tried = true, v, rv, got, nil
		return true, nil
	}
	return false, fmt.Errorf("%s holds %s at rv %d: neither the acknowledged write (%v, %s at rv %d) nor one of the %d refused since",
		l.name, v, rv, l.hasAck, l.acked, l.ackedRV, len(l.tried))
}

// faultLoad is faultWriters running against one server.
type faultLoad struct {
	writers []*faultWriter
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	errs    chan error
}

// startFaultLoad runs every writer on its own goroutine, owned by the
// returned load until stop; even ids write over JSON, odd over protobuf.
func startFaultLoad(ctx context.Context, c *leaseClients, writers []*faultWriter, refusable func(int32) bool) *faultLoad {
	ctx, cancel := context.WithCancel(ctx)
	fl := &faultLoad{writers: writers, cancel: cancel, errs: make(chan error, len(writers))}
	for _, w := range writers {
		fl.wg.Add(1)
		go func() {
			defer fl.wg.Done()
			if err := w.run(ctx, c.pick(w.id), refusable); err != nil {
				fl.errs <- err
			}
		}()
	}
	return fl
}

// acks is the number of acknowledged writes so far.
func (fl *faultLoad) acks() int64 {
	var n int64
	for _, w := range fl.writers {
		n += w.acks.Load()
	}
	return n
}

// stop ends the writers and returns every error they met.
func (fl *faultLoad) stop() error {
	fl.cancel()
	fl.wg.Wait()
	close(fl.errs)
	var errs []error
	for err := range fl.errs {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// refusals sums the writers' refusals by status code (after stop).
func (fl *faultLoad) refusals() map[int32]int {
	out := map[int32]int{}
	for _, w := range fl.writers {
		for code, n := range w.refused {
			out[code] += n
		}
	}
	return out
}

// verifyFaultLeases reads every lease of writers (stopped) and checks each
// holds its acknowledged write or a later refused one; it returns the
// acknowledged writes' leases checked and how many held an unacknowledged
// write that landed.
func verifyFaultLeases(ctx context.Context, cs kubernetes.Interface, writers []*faultWriter) (acked, landed int, err error) {
	var errs []error
	for _, w := range writers {
		for _, l := range w.leases {
			had := l.hasAck
			ok, err := l.check(ctx, cs)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if had {
				acked++
			}
			if ok {
				landed++
			}
		}
	}
	return acked, landed, errors.Join(errs...)
}
