package bench

import (
	"bytes"
	"sync/atomic"
)

// requestBody is a request body over a buffer that its sender wants back.
// net/http may close a request's body after RoundTrip has returned (HTTP/2
// finishes or abandons the upload on its own goroutine), so the buffer is
// free for the next request only once closed reads true: Close comes after
// the transport's last read, and the atomic orders the two.
type requestBody struct {
	bytes.Reader
	closed atomic.Bool
}

// reset makes the body read data from the start, as a new body.
func (b *requestBody) reset(data []byte) {
	b.Reader.Reset(data)
	b.closed.Store(false)
}

// Close implements io.Closer.
func (b *requestBody) Close() error {
	b.closed.Store(true)
	return nil
}
