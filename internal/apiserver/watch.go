package apiserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/leasehold/leasehold/internal/apiserver/respond"
	"github.com/leasehold/leasehold/internal/objects"
	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/watchcache"
)

func (s *Server) watch(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) error {
	n, err := s.accept(r, false)
	if err != nil {
		return err
	}
	if n.info.StreamSerializer == nil {
		// A form the answer could take, but not as a stream.
		return respond.NotAcceptable(s.neg.MediaTypes())
	}
	q := r.URL.Query()
	o, err := parseListOptions(res, q, true)
	if err != nil {
		return err
	}
	if n, err = withTableOptions(n, q); err != nil {
		return err
	}
	if info.name != "" {
		// The deprecated /watch/.../<name> form: a watch of one object.
		sel, err := objects.ParseSelector(res, q.Get("labelSelector"), joinSelector(q.Get("fieldSelector"), "metadata.name="+info.name))
		if err != nil {
			return err
		}
		o.Selector = sel
	}
	// As in kube-apiserver, timeoutSeconds=0 means the default timeout.
	timeout := time.Duration(float64(s.cfg.MinRequestTimeout) * (1 + rand.Float64()))
	if o.TimeoutSeconds != nil && *o.TimeoutSeconds != 0 {
		timeout = time.Duration(*o.TimeoutSeconds) * time.Second
	}
	ctx := r.Context()

	sw := &watchStream{s: s, res: res, n: n, w: w, flusher: flusherOf(w)}
	watcher, err := s.objects.Watch(ctx, res, info.namespace, o)
	if err != nil {
		var expired *objects.ExpiredError
		if errors.As(err, &expired) {
			// After the resourceVersion is parsed, kube-apiserver reports a
			// too-old revision as an ERROR event on a 200 stream.
			sw.start()
			return sw.send(watch.Error, &expired.Status)
		}
		return err
	}
	defer watcher.Stop()
	// The timeout bounds the stream, not its setup: a watch whose time is
	// already up (negative timeoutSeconds) is an empty 200 stream, as in
	// kube-apiserver, rather than a failed read of the current revision.
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	gr := res.GroupResource()
	s.cfg.Metrics.OpenWatches.WithLabelValues(gr.Group, gr.Resource).Inc()
	defer s.cfg.Metrics.OpenWatches.WithLabelValues(gr.Group, gr.Resource).Dec()
	events := s.cfg.Metrics.WatchEventsOut.WithLabelValues(gr.Group, gr.Resource)

	sw.start()
	sw.limitWrites(time.Now().Add(timeout))
	defer sw.clearDeadline()
	ch := watcher.Events()
	pacer := newFlushPacer(s.cfg.WatchFlushInterval)
	defer pacer.stop()
	// flush sends what was written and lifts the deadline: nothing is being
	// written now. On HTTP/2 a write deadline is a timer that resets the
	// stream with INTERNAL_ERROR when it fires, written to or not, so a
	// quiet watch was cut watchWriteTimeout after its last event (clients
	// saw Node and Event watches end every 10-25 s). The request's context
	// still ends the stream at timeoutSeconds.
	flush := func() error {
		if err := sw.flushErr(); err != nil {
			return err
		}
		pacer.flushed(time.Now())
		sw.clearDeadline()
		return nil
	}
	for {
		var err error
		select {
		case <-ctx.Done():
			return nil
		case <-s.cfg.StopWatches:
			// Shutdown: end the stream cleanly so clients re-watch elsewhere.
			return nil
		case <-pacer.C():
			err = flush()
		case ev, ok := <-ch:
			if !ok {
				return nil
			}
			// A client that stops reading blocks the write until its
			// deadline: the stream ends and the watcher is stopped.
			err = sw.setDeadline()
			if err == nil {
				err = sw.sendEvent(ev)
			}
			if err == nil {
				events.Inc()
				if len(ch) == 0 && pacer.due(time.Now()) {
					err = flush()
				}
			}
		}
		if err != nil {
			s.logger.Debug("watch stream ended", "err", err)
			return nil
		}
	}
}

func joinSelector(a, b string) string {
	if a == "" {
		return b
	}
	return a + "," + b
}

func flusherOf(w http.ResponseWriter) http.Flusher {
	f, _ := w.(http.Flusher)
	return f
}

// watchStream writes framed watch events in the negotiated encoding.
type watchStream struct {
	s       *Server
	res     *registry.Resource
	n       negotiated
	w       http.ResponseWriter
	flusher http.Flusher
	enc     runtime.Encoder
	sentRow bool
	buf     bytes.Buffer
	// rc sets write deadlines until end (limitWrites); nil: none.
	rc  *http.ResponseController
	end time.Time
}

func (sw *watchStream) start() {
	sw.w.Header().Set("Content-Type", sw.n.info.MediaType+";stream=watch")
	sw.w.WriteHeader(http.StatusOK)
	sw.enc = sw.n.info.StreamSerializer.Serializer
	sw.flush()
}

// watchWriteTimeout bounds one frame's write and flush: a watcher that
// reads nothing for that long is dropped, and with it what it pins.
const watchWriteTimeout = 10 * time.Second

// limitWrites makes every later write of the stream end by end (the watch's
// timeoutSeconds) and within watchWriteTimeout, through write deadlines on
// the connection: the timeout alone ends the stream only between events,
// never while a write is blocked on a client that stopped reading.
func (sw *watchStream) limitWrites(end time.Time) {
	sw.rc, sw.end = http.NewResponseController(sw.w), end
}

// setDeadline sets the write deadline for the next frame. A writer without
// deadlines (an in-process recorder) gets none; that is logged once.
func (sw *watchStream) setDeadline() error {
	if sw.rc == nil {
		return nil
	}
	deadline := time.Now().Add(watchWriteTimeout)
	if sw.end.Before(deadline) {
		deadline = sw.end
	}
	err := sw.rc.SetWriteDeadline(deadline)
	if errors.Is(err, http.ErrNotSupported) {
		sw.rc = nil
		if sw.s.noWriteDeadlines.CompareAndSwap(false, true) {
			sw.s.logger.Info("watch streams without write deadlines: the response writer does not support them")
		}
		return nil
	}
	return err
}

// clearDeadline lifts the deadline when the stream ends, so that it cannot
// cut the connection's next request short.
func (sw *watchStream) clearDeadline() {
	if sw.rc != nil {
		_ = sw.rc.SetWriteDeadline(time.Time{})
	}
}

// flushErr pushes buffered frames to the client, reporting a failed write.
func (sw *watchStream) flushErr() error {
	if sw.rc == nil {
		sw.flush()
		return nil
	}
	return sw.rc.Flush()
}

func (sw *watchStream) flush() {
	if sw.flusher != nil {
		sw.flusher.Flush()
	}
}

func (sw *watchStream) sendEvent(ev watchcache.Event) error {
	if ev.Type == watch.Bookmark {
		obj, err := sw.bookmarkObject(ev)
		if err != nil {
			return err
		}
		return sw.send(watch.Bookmark, obj)
	}
	obj, err := sw.s.transform(sw.res, sw.n, ev.Object, false, sw.sentRow)
	if err != nil {
		return err
	}
	sw.sentRow = sw.n.target == targetTable
	return sw.send(ev.Type, obj)
}

// bookmarkObject is the watched kind carrying only a resourceVersion (and the
// initial-events-end annotation when it closes a streaming list).
func (sw *watchStream) bookmarkObject(ev watchcache.Event) (runtime.Object, error) {
	var obj runtime.Object
	switch sw.n.target {
	case targetObject:
		obj = sw.res.New()
		obj.GetObjectKind().SetGroupVersionKind(sw.res.GroupVersionKind())
	case targetTable:
		t := &metav1.Table{}
		t.SetGroupVersionKind(tableGVK)
		t.ResourceVersion = strconv.FormatInt(ev.Rev, 10)
		return t, nil
	default:
		p := &metav1.PartialObjectMetadata{}
		p.SetGroupVersionKind(pomGVK)
		obj = p
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	acc.SetResourceVersion(strconv.FormatInt(ev.Rev, 10))
	if ev.InitialEventsEnd {
		acc.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	}
	return obj, nil
}

func (sw *watchStream) send(t watch.EventType, obj runtime.Object) error {
	sw.buf.Reset()
	if err := sw.n.info.Serializer.Encode(obj, &sw.buf); err != nil {
		return fmt.Errorf("encoding watch event object: %w", err)
	}
	ev := &metav1.WatchEvent{Type: string(t), Object: runtime.RawExtension{Raw: sw.buf.Bytes()}}
	frame := sw.n.info.StreamSerializer.Framer.NewFrameWriter(sw.w)
	if err := sw.enc.Encode(ev, frame); err != nil {
		return fmt.Errorf("writing watch event: %w", err)
	}
	return nil
}
