package dashboard

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/leasehold/leasehold/internal/envelope"
)

// The lease source lists and watches every Lease straight into the Fleet,
// without an informer. An informer decodes each watch event into a whole
// Lease (managed fields and all), caches it, and hands it through a queue
// and two goroutines to the handler; the dashboard keeps none of that. The
// source reads the watch stream's protobuf frames itself, decodes only the
// fields a leaseRecord holds (lean, below), and applies every event that
// arrived in one read under one Fleet lock, on the goroutine that read it.
// At 20,000 node leases renewing every 10 s (scripts/dashboard-cost.sh),
// the informer's decoding was a quarter of the dashboard's CPU profile and
// its queue and handlers another seventh; with this source and the dense
// tick (Fleet.hot) the dashboard spent 12.0-14.3 CPU-µs per renewal
// against 28.9-39.1 (3 alternating runs each, one server binary, load
// 7-21, 2026-11-28).
//
// It keeps the reflector's contract: list (page by page), then watch from
// the list's resourceVersion with bookmarks, and watch again from the last
// resourceVersion seen when the server ends a watch; list again when that
// version is too old (410) or after any other error, with backoff.

// leaseSource feeds a Fleet with every Lease the client may read.
type leaseSource struct {
	client rest.Interface // coordination.k8s.io/v1
	fleet  *Fleet
	// report receives each failed list or watch.
	report func(error)
	synced atomic.Bool
}

// Backoff after a failed list or watch, as client-go's reflector's.
const (
	minBackoff = 800 * time.Millisecond
	maxBackoff = 30 * time.Second
)

// hasSynced says the first list has been applied.
func (s *leaseSource) hasSynced() bool { return s.synced.Load() }

// run lists and watches until ctx ends.
func (s *leaseSource) run(ctx context.Context) {
	delay := time.Duration(0)
	wait := func(err error) {
		s.report(err)
		delay = min(max(2*delay, minBackoff), maxBackoff)
		t := time.NewTimer(delay/2 + rand.N(delay/2))
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
	for ctx.Err() == nil {
		rv, err := s.list(ctx)
		if err != nil {
			wait(fmt.Errorf("listing leases: %w", err))
			continue
		}
		s.synced.Store(true)
		delay = 0
		for ctx.Err() == nil {
			began := time.Now()
			events, err := s.watch(ctx, &rv)
			if events > 0 {
				delay = 0
			}
			if err == nil {
				if events == 0 && time.Since(began) < time.Second { // a server that ends every watch at once
					wait(errors.New("watching leases: the server ended the watch at once"))
				}
				continue
			}
			if ctx.Err() != nil {
				return
			}
			wait(fmt.Errorf("watching leases: %w", err))
			if !utilnet.IsConnectionRefused(err) && !apierrors.IsTooManyRequests(err) {
				break // list again: the version is gone, or something else is wrong
			}
		}
	}
}

// list reads every lease page by page into the Fleet, which forgets the
// leases the list does not hold, and returns the list's resourceVersion.
func (s *leaseSource) list(ctx context.Context) (string, error) {
	opts := metav1.ListOptions{Limit: listPageSize}
	var recs []leaseRecord
	rv := ""
	for {
		var page coordinationv1.LeaseList
		err := s.client.Get().Resource("leases").VersionedParams(&opts, scheme.ParameterCodec).Do(ctx).Into(&page)
		if opts.Continue != "" && apierrors.IsResourceExpired(err) {
			// The continue token outlived the server's history: list at
			// once, as client-go's pager does.
			opts, recs, rv = metav1.ListOptions{}, recs[:0], ""
			continue
		}
		if err != nil {
			return "", err
		}
		if rv == "" {
			rv = page.ResourceVersion // each page's, the first page's revision
		}
		for i := range page.Items {
			recs = append(recs, *newLeaseRecord(&page.Items[i]))
		}
		if page.Continue == "" {
			break
		}
		opts.Continue = page.Continue
	}
	s.fleet.replaceLeases(recs)
	return rv, nil
}

// watch watches leases from *rv, applying events and advancing *rv, until
// the stream ends; it returns how many events it applied, and nil when the
// server ended the stream (watch again from *rv).
func (s *leaseSource) watch(ctx context.Context, rv *string) (int, error) {
	// As the reflector: 5 to 10 minutes, so that watches end spread out.
	timeout := int64(300 + rand.IntN(300))
	body, err := s.client.Get().Resource("leases").VersionedParams(&metav1.ListOptions{
		Watch: true, ResourceVersion: *rv, AllowWatchBookmarks: true, TimeoutSeconds: &timeout,
	}, scheme.ParameterCodec).Stream(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = body.Close() }()
	r := &watchReader{br: bufio.NewReaderSize(body, 64<<10), fleet: s.fleet, rv: *rv}
	err = r.run()
	*rv = r.rv
	var end streamEnd
	if errors.As(err, &end) {
		// The server ended the stream, or it broke: go on from the last
		// version seen, as the reflector does.
		err = nil
	}
	return r.events, err
}

// streamEnd is a watch stream's read error: the end of the watch, not a
// reason to list again.
type streamEnd struct{ error }

func (e streamEnd) Unwrap() error { return e.error }

// watchReader reads one watch stream.
type watchReader struct {
	br    *bufio.Reader
	fleet *Fleet
	// rv is the resourceVersion of the last event applied.
	rv     string
	events int
	batch  []leaseEvent
	frame  []byte
}

// leaseEvent is one decoded watch event.
type leaseEvent struct {
	deleted bool
	rec     leaseRecord
}

// run reads the stream, in protobuf (length-prefixed frames) or, from a
// server that answered in JSON, as JSON objects.
func (w *watchReader) run() error {
	b, err := w.br.Peek(1)
	if err != nil {
		return streamEnd{err}
	}
	if b[0] == '{' { // a frame length would be over 2 GB
		return w.runJSON()
	}
	var rv []byte // the latest event's version, in the frame buffer's copy
	for {
		n, err := w.br.Peek(4)
		if err != nil {
			return streamEnd{err}
		}
		size := int(binary.BigEndian.Uint32(n))
		if _, err := w.br.Discard(4); err != nil {
			return streamEnd{err}
		}
		if cap(w.frame) < size {
			w.frame = make([]byte, size)
		}
		frame := w.frame[:size]
		if _, err := io.ReadFull(w.br, frame); err != nil {
			return streamEnd{err}
		}
		typ, obj, err := watchFrame(frame)
		if err != nil {
			return err
		}
		var ev leaseEvent
		switch watch.EventType(typ) {
		case watch.Added, watch.Modified, watch.Deleted:
			ev.deleted = watch.EventType(typ) == watch.Deleted
			v, err := leanLease(obj, &ev.rec)
			if err != nil {
				return fmt.Errorf("decoding a %s lease event: %w", typ, err)
			}
			w.batch = append(w.batch, ev)
			rv = append(rv[:0], v...)
		case watch.Bookmark:
			v, err := leanLease(obj, &ev.rec)
			if err != nil {
				return fmt.Errorf("decoding a bookmark: %w", err)
			}
			rv = append(rv[:0], v...)
		case watch.Error:
			w.flush(rv)
			return statusError(obj)
		default:
			return fmt.Errorf("watch event of type %q", typ)
		}
		// Apply what has arrived before a read that may wait: one Fleet
		// lock for every event of one server flush.
		if !w.frameBuffered() {
			w.flush(rv)
		}
	}
}

// frameBuffered says a whole frame is buffered, so reading it will not wait.
func (w *watchReader) frameBuffered() bool {
	n := w.br.Buffered()
	if n < 4 {
		return false
	}
	b, _ := w.br.Peek(4)
	return n-4 >= int(binary.BigEndian.Uint32(b))
}

// flush applies the batch and notes rv as the version reached.
func (w *watchReader) flush(rv []byte) {
	if len(w.batch) > 0 {
		w.fleet.applyLeases(w.batch)
		w.events += len(w.batch)
		clear(w.batch) // drop the records' strings and maps
		w.batch = w.batch[:0]
	}
	if len(rv) > 0 && string(rv) != w.rv {
		w.rv = string(rv)
	}
}

// runJSON reads a JSON watch stream, decoding each Lease whole: only a
// server that offers no protobuf sends one.
func (w *watchReader) runJSON() error {
	dec := json.NewDecoder(w.br)
	for {
		var ev metav1.WatchEvent
		if err := dec.Decode(&ev); err != nil {
			return streamEnd{err}
		}
		switch watch.EventType(ev.Type) {
		case watch.Added, watch.Modified, watch.Deleted, watch.Bookmark:
			var l coordinationv1.Lease
			if err := json.Unmarshal(ev.Object.Raw, &l); err != nil {
				return fmt.Errorf("decoding a %s lease event: %w", ev.Type, err)
			}
			if watch.EventType(ev.Type) != watch.Bookmark {
				w.batch = append(w.batch, leaseEvent{deleted: watch.EventType(ev.Type) == watch.Deleted, rec: *newLeaseRecord(&l)})
			}
			w.flush([]byte(l.ResourceVersion))
		case watch.Error:
			return statusError(ev.Object.Raw)
		default:
			return fmt.Errorf("watch event of type %q", ev.Type)
		}
	}
}

// statusError is the error an ERROR event's object (a Status) carries.
func statusError(raw []byte) error {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
	if err != nil {
		return fmt.Errorf("decoding a watch error: %w", err)
	}
	st, ok := obj.(*metav1.Status)
	if !ok {
		return fmt.Errorf("a watch error of kind %T", obj)
	}
	return apierrors.FromObject(st)
}

// watchFrame reads a protobuf watch frame: a metav1.WatchEvent, whose
// object is a runtime.RawExtension holding the object as the protobuf
// serializer writes it ("k8s\x00" and a runtime.Unknown).
func watchFrame(b []byte) (typ string, obj []byte, err error) {
	err = protoFields(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			typ = string(v)
		case 2:
			return protoFields(v, func(num protowire.Number, v []byte) error {
				if num == 1 {
					obj = v
				}
				return nil
			})
		}
		return nil
	})
	return typ, obj, err
}

// leaseKind is what a lease's envelope must name.
var leaseKind = coordinationv1.SchemeGroupVersion.WithKind("Lease")

// leanLease decodes the fields of a Lease a leaseRecord holds into r, from
// an object as the protobuf serializer writes it (package envelope), and
// returns the Lease's resourceVersion (a slice of b). It reads what
// newLeaseRecord reads of a Lease (TestLeanLeaseMatchesFullDecode).
func leanLease(b []byte, r *leaseRecord) (rv []byte, err error) {
	raw, ok := envelope.Raw(b, leaseKind)
	if !ok {
		return nil, errors.New("not a protobuf Lease")
	}
	*r = leaseRecord{}
	err = protoFields(raw, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			return protoFields(v, func(num protowire.Number, v []byte) error {
				return objectMeta(num, v, r, &rv)
			})
		case 2:
			return protoFields(v, func(num protowire.Number, v []byte) error { return leaseSpec(num, v, r) })
		}
		return nil
	})
	return rv, err
}

// objectMeta reads one field of a Lease's ObjectMeta.
func objectMeta(num protowire.Number, v []byte, r *leaseRecord, rv *[]byte) error {
	switch num {
	case 1:
		r.key.name = string(v)
	case 3:
		r.key.ns = string(v)
		if r.key.ns == NodeLeaseNamespace {
			r.key.ns = NodeLeaseNamespace // one copy for every node lease
		}
	case 6:
		*rv = v
	case 11:
		var k, val string
		if err := protoFields(v, func(num protowire.Number, v []byte) error {
			switch num {
			case 1:
				k = string(v)
			case 2:
				val = string(v)
			}
			return nil
		}); err != nil {
			return err
		}
		if r.labels == nil {
			r.labels = map[string]string{}
		}
		r.labels[k] = val
	case 13:
		if r.owner != nil { // newLeaseRecord keeps the first
			return nil
		}
		o := &ownerRecord{}
		if err := protoFields(v, func(num protowire.Number, v []byte) error {
			switch num {
			case 1:
				o.kind = string(v)
			case 3:
				o.name = string(v)
			}
			return nil
		}); err != nil {
			return err
		}
		r.owner = o
	}
	return nil
}

// leaseSpec reads one field of a LeaseSpec.
func leaseSpec(num protowire.Number, v []byte, r *leaseRecord) error {
	switch num {
	case 1:
		r.holder = string(v)
	case 2:
		r.duration = time.Duration(int32(varint(v))) * time.Second
	case 3:
		return microTime(v, &r.acquire)
	case 4:
		return microTime(v, &r.renew)
	case 5:
		r.transitions = int32(varint(v))
	case 7:
		r.preferred = string(v)
	}
	return nil
}

// microTime decodes a metav1.MicroTime as its Unmarshal does: empty is
// the zero time, else seconds and nanoseconds truncated to microseconds,
// in the local zone (time.Unix's).
func microTime(b []byte, t *time.Time) error {
	if len(b) == 0 {
		*t = time.Time{}
		return nil
	}
	var sec, nsec int64
	if err := protoFields(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			sec = int64(varint(v))
		case 2:
			nsec = int64(int32(varint(v)))
		}
		return nil
	}); err != nil {
		return err
	}
	*t = time.Unix(sec, int64(time.Duration(nsec).Truncate(time.Microsecond)))
	return nil
}

// varint reads a varint field's value as protoFields passes it.
func varint(v []byte) uint64 {
	x, _ := protowire.ConsumeVarint(v)
	return x
}

// protoFields calls fn with each field of the message b: the bytes of a
// length-delimited field, or the encoding of a varint (read it with
// varint); other wire types are skipped.
func protoFields(b []byte, fn func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("protobuf tag: %w", protowire.ParseError(n))
		}
		b = b[n:]
		var v []byte
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			_, n = protowire.ConsumeVarint(b)
			if n >= 0 {
				v = b[:n]
			}
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("protobuf field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
		if v != nil {
			if err := fn(num, v); err != nil {
				return err
			}
		}
	}
	return nil
}
