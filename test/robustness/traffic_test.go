package robustness

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"sync"
	"syscall"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

const (
	// namespace holds the suite's Leases, and nothing else.
	namespace = "robustness"
	// opTimeout bounds one request. It outlasts the small run's pauses, so
	// that a pause delays answers rather than losing them: every unknown
	// write multiplies porcupine's search.
	opTimeout = 10 * time.Second
)

// keys are the Lease names the clients share: few, so that they collide.
var keys = []string{"k0", "k1", "k2", "k3"}

// client is one traffic client: its own clientset (its own connection)
// and random source.
type client struct {
	id   int
	c    kubernetes.Interface
	rng  *rand.Rand
	h    *history
	seq  int
	seen map[string]metav1.ObjectMeta // last rv and uid seen per key
	odd  *oddErrors
}

// oddErrors counts answers the model has no place for (400, 422, ...),
// recorded as unknown, and keeps the first few to log.
type oddErrors struct {
	mu    sync.Mutex
	n     int
	first []string
}

func (o *oddErrors) add(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n++
	if len(o.first) < 5 {
		o.first = append(o.first, s)
	}
}

// run does operations until ctx ends.
func (c *client) run(ctx context.Context) {
	for ctx.Err() == nil {
		c.one(ctx)
		// Keep the machine usable for others: a few hundred ops/s in all.
		time.Sleep(time.Duration(c.rng.Intn(20)) * time.Millisecond)
	}
}

func (c *client) value() string {
	c.seq++
	return fmt.Sprintf("c%d-%d", c.id, c.seq)
}

// precondition picks a resourceVersion or uid to require: usually the last
// one seen for key (which may be stale), sometimes a made-up one.
func (c *client) precondition(key string) (int64, string) {
	m := c.seen[key]
	rv, _ := strconv.ParseInt(m.ResourceVersion, 10, 64)
	if rv == 0 || c.rng.Intn(8) == 0 {
		rv = 1 + c.rng.Int63n(max(rv, 10))
	}
	uid := string(m.UID)
	if uid == "" || c.rng.Intn(8) == 0 {
		uid = "00000000-0000-0000-0000-00000000000" + strconv.Itoa(c.rng.Intn(10))
	}
	return rv, uid
}

// one does one random operation and records it.
func (c *client) one(ctx context.Context) {
	key := keys[c.rng.Intn(len(keys))]
	leases := c.c.CoordinationV1().Leases(namespace)
	in := input{Key: key}
	var do func(ctx context.Context) (*coordinationv1.Lease, error)
	switch n := c.rng.Intn(100); {
	case n < 15:
		in.Kind, in.Value = opCreate, c.value()
		do = func(ctx context.Context) (*coordinationv1.Lease, error) {
			return leases.Create(ctx, lease(key, in.Value, 0, ""), metav1.CreateOptions{})
		}
	case n < 30:
		in.Kind = opGet
		do = func(ctx context.Context) (*coordinationv1.Lease, error) {
			return leases.Get(ctx, key, metav1.GetOptions{})
		}
	case n < 55:
		in.Kind, in.Value = opUpdate, c.value()
		// Mostly with a resourceVersion, which updating an existing Lease
		// needs; without one, a PUT creates an absent Lease.
		rv, uid := c.precondition(key)
		switch n := c.rng.Intn(10); {
		case n < 5:
			in.RV = rv
		case n < 7:
			in.RV, in.UID = rv, uid
		case n < 8:
			in.UID = uid
		}
		do = func(ctx context.Context) (*coordinationv1.Lease, error) {
			return leases.Update(ctx, lease(key, in.Value, in.RV, in.UID), metav1.UpdateOptions{})
		}
	case n < 75:
		in.Kind, in.Value = opPatch, c.value()
		var meta string
		if c.rng.Intn(2) == 0 {
			in.RV, _ = c.precondition(key)
			meta = fmt.Sprintf(`"metadata":{"resourceVersion":"%d"},`, in.RV)
		}
		patch := fmt.Sprintf(`{%s"spec":{"holderIdentity":%q}}`, meta, in.Value)
		do = func(ctx context.Context) (*coordinationv1.Lease, error) {
			return leases.Patch(ctx, key, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		}
	case n < 87:
		in.Kind = opDelete
		var opts metav1.DeleteOptions
		rv, uid := c.precondition(key)
		switch c.rng.Intn(3) {
		case 0:
			in.RV = rv
			s := strconv.FormatInt(rv, 10)
			opts.Preconditions = &metav1.Preconditions{ResourceVersion: &s}
		case 1:
			in.UID = uid
			u := types.UID(uid)
			opts.Preconditions = &metav1.Preconditions{UID: &u}
		}
		do = func(ctx context.Context) (*coordinationv1.Lease, error) { return nil, leases.Delete(ctx, key, opts) }
	default:
		c.list(ctx)
		return
	}
	call := c.h.now()
	octx, cancel := context.WithTimeout(ctx, opTimeout)
	l, err := do(octx)
	cancel()
	ret := c.h.now()
	out, keep := c.classify(in, l, err)
	if !keep {
		return
	}
	if out.Result == resOK && l != nil {
		c.seen[key] = l.ObjectMeta
	}
	c.h.add(record{Client: c.id, In: in, Out: out, Call: call, Return: ret})
}

// list lists the namespace and records it as one read per key, all with
// the list's call and return times.
func (c *client) list(ctx context.Context) {
	call := c.h.now()
	octx, cancel := context.WithTimeout(ctx, opTimeout)
	l, err := c.c.CoordinationV1().Leases(namespace).List(octx, metav1.ListOptions{})
	cancel()
	ret := c.h.now()
	if err != nil {
		return // a failed read did nothing
	}
	got := map[string]coordinationv1.Lease{}
	for _, item := range l.Items {
		got[item.Name] = item
	}
	for _, k := range keys {
		out := output{Result: resNotFound}
		if item, ok := got[k]; ok {
			out = objectOutput(&item)
			c.seen[k] = item.ObjectMeta
		}
		c.h.add(record{Client: c.id, In: input{Kind: opRead, Key: k}, Out: out, Call: call, Return: ret})
	}
}

// classify turns an answer into the model's output; keep is false for a
// failed read, which did nothing.
func (c *client) classify(in input, l *coordinationv1.Lease, err error) (out output, keep bool) {
	write := in.Kind != opGet
	switch {
	case err == nil:
		if in.Kind == opDelete {
			return output{Result: resOK}, true
		}
		return objectOutput(l), true
	case apierrors.IsNotFound(err):
		return output{Result: resNotFound}, true
	case apierrors.IsAlreadyExists(err):
		return output{Result: resExists}, true
	case apierrors.IsConflict(err):
		return output{Result: resConflict, Err: err.Error()}, true
	case apierrors.IsInvalid(err) && in.Kind == opUpdate:
		return output{Result: resInvalid}, true
	case !write:
		return output{}, false
	case apierrors.ReasonForError(err) == "InsufficientStorage":
		return output{Result: resRefused}, true
	case errors.Is(err, syscall.ECONNREFUSED):
		return output{}, false // never sent: the server was down
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		if code < 500 && code != 429 && code != 408 {
			c.odd.add(fmt.Sprintf("%s %s: %v", in.Kind, in.Key, err))
		}
	}
	return output{Result: resUnknown, Err: err.Error()}, true
}

func objectOutput(l *coordinationv1.Lease) output {
	rv, _ := strconv.ParseInt(l.ResourceVersion, 10, 64)
	out := output{Result: resOK, RV: rv, UID: string(l.UID)}
	if l.Spec.HolderIdentity != nil {
		out.Value = *l.Spec.HolderIdentity
	}
	return out
}

// lease is the object a create or update sends.
func lease(name, value string, rv int64, uid string) *coordinationv1.Lease {
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID(uid)},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &value},
	}
	if rv != 0 {
		l.ResourceVersion = strconv.FormatInt(rv, 10)
	}
	return l
}
