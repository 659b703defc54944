package apiserver_test

import (
	"context"
	"net/http/httptest"
	"sync"
)

// contextUntil is a context that ends when done is closed.
func contextUntil(done <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-done:
		case <-ctx.Done():
		}
		cancel()
	}()
	return ctx, cancel
}

// notifyingRecorder closes started when the response's header is written
// (a watch stream has begun).
type notifyingRecorder struct {
	*httptest.ResponseRecorder
	started chan struct{}
	once    sync.Once
}

func (r *notifyingRecorder) WriteHeader(code int) {
	r.ResponseRecorder.WriteHeader(code)
	r.once.Do(func() { close(r.started) })
}

func (r *notifyingRecorder) Flush() { r.ResponseRecorder.Flush() }
