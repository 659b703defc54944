package elect

import (
	"context"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// eventComponent is the reporting controller of the LeaderElection events.
const eventComponent = "leasehold-elect"

// eventSink counts the events that reached the API server (or were given
// up on), so that the elector can wait for "stopped leading" to be written
// before it exits: client-go's broadcaster delivers asynchronously and
// drops what is queued when it is shut down.
type eventSink struct {
	record.EventSink
	handled atomic.Int64
}

func (s *eventSink) Create(e *corev1.Event) (*corev1.Event, error) {
	defer s.handled.Add(1)
	return s.EventSink.Create(e)
}

func (s *eventSink) Update(e *corev1.Event) (*corev1.Event, error) {
	defer s.handled.Add(1)
	return s.EventSink.Update(e)
}

func (s *eventSink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	defer s.handled.Add(1)
	return s.EventSink.Patch(e, data)
}

// eventRecorder owns a broadcaster writing events to the lease's namespace.
type eventRecorder struct {
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
	sink        *eventSink
	cancel      context.CancelFunc
}

// newEventRecorder starts recording; ctx carries the logger for client-go.
func newEventRecorder(ctx context.Context, c kubernetes.Interface, ns string, logger *slog.Logger) *eventRecorder {
	ctx, cancel := context.WithCancel(ctx)
	b := record.NewBroadcaster(record.WithContext(ctx))
	sink := &eventSink{EventSink: &typedcorev1.EventSinkImpl{Interface: c.CoreV1().Events(ns)}}
	b.StartRecordingToSink(sink)
	host, err := os.Hostname()
	if err != nil {
		logger.Warn("no hostname for the events' source", "err", err)
	}
	rec := b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: eventComponent, Host: host})
	return &eventRecorder{broadcaster: b, recorder: rec, sink: sink, cancel: cancel}
}

// shutdown waits up to timeout until want events were handed to the sink,
// then stops the broadcaster and its goroutines.
func (r *eventRecorder) shutdown(want int, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for r.sink.handled.Load() < int64(want) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	r.broadcaster.Shutdown()
	r.cancel()
}
