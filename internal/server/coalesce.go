package server

import (
	"errors"
	"net"
	"runtime"
	"sync"
	"time"
)

// maxPendingWrite bounds the bytes a coalescing connection holds for its
// writer: past it, Write blocks until the writer has sent them, so a peer
// that stops reading still pushes back on the server as a plain connection
// would.
const maxPendingWrite = 256 << 10

// keepBuffer is the largest buffer a connection keeps between bursts; a
// larger one (a long list response) is left to the garbage collector so
// that idle connections hold little memory.
const keepBuffer = 64 << 10

// closeFlushTimeout bounds how long Close waits for pending bytes (a GOAWAY
// frame, a TLS close_notify) to reach a peer before closing anyway.
const closeFlushTimeout = time.Second

// coalescingListener wraps the TCP listener under TLS so that each
// connection's writes go through one writer goroutine that sends whatever
// has gathered in a single system call.
//
// Why: Go's HTTP/2 server flushes its buffer whenever its write queue is
// empty, and it queues a response's HEADERS frame, waits for it to be
// written, then queues the DATA frame. A small response therefore costs
// two TLS records and two write(2) calls, each delivering a segment
// through the loopback stack, which was the largest share of a renewal's
// server CPU. The writer yields once before sending, long enough for the
// DATA frame flushed right behind the HEADERS frame to join it.
type coalescingListener struct{ net.Listener }

func (l coalescingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newCoalescingConn(c), nil
}

// coalescingConn is a net.Conn whose Write hands bytes to the connection's
// writer goroutine and returns. Invariants: bytes reach the peer in the
// order they were written; a write error is sticky and every later Write
// returns it; the writer goroutine exits before Close returns.
type coalescingConn struct {
	net.Conn

	kick chan struct{} // capacity 1: pending has bytes the writer has not taken
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the writer exits

	mu      sync.Mutex
	drained *sync.Cond // broadcast when the writer takes pending or stops
	pending []byte
	spare   []byte // the buffer the writer last sent, reused for pending
	err     error
	closing bool
	once    sync.Once
}

func newCoalescingConn(c net.Conn) *coalescingConn {
	cc := &coalescingConn{
		Conn: c,
		kick: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	cc.drained = sync.NewCond(&cc.mu)
	go cc.run()
	return cc
}

func (c *coalescingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.err == nil && !c.closing && len(c.pending) >= maxPendingWrite {
		c.drained.Wait()
	}
	switch {
	case c.err != nil:
		return 0, c.err
	case c.closing:
		return 0, net.ErrClosed
	}
	if len(c.pending) == 0 {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
	c.pending = append(c.pending, p...)
	return len(p), nil
}

// run is the connection's writer. It owns the underlying connection's
// Write; Close stops it.
func (c *coalescingConn) run() {
	defer close(c.done)
	for {
		select {
		case <-c.kick:
		case <-c.stop:
			c.send() // whatever Close left behind
			return
		}
		// One yield lets goroutines made runnable by the write that kicked
		// us (the handler whose HEADERS just went out) add their bytes.
		runtime.Gosched()
		if !c.send() {
			return
		}
	}
}

// send writes everything pending in one call and reports whether the
// connection is still usable.
func (c *coalescingConn) send() bool {
	c.mu.Lock()
	buf := c.pending
	c.pending = c.spare[:0]
	c.drained.Broadcast()
	c.mu.Unlock()
	var err error
	if len(buf) > 0 {
		_, err = c.Conn.Write(buf)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.spare = nil
	if cap(buf) <= keepBuffer {
		c.spare = buf[:0]
	}
	if err != nil && c.err == nil {
		c.err = err
		c.drained.Broadcast()
	}
	return c.err == nil
}

// Close sends what is pending (bounded by closeFlushTimeout), stops the
// writer and closes the connection.
func (c *coalescingConn) Close() error {
	var err error
	c.once.Do(func() {
		c.mu.Lock()
		c.closing = true
		c.drained.Broadcast()
		c.mu.Unlock()
		_ = c.Conn.SetWriteDeadline(time.Now().Add(closeFlushTimeout))
		close(c.stop)
		<-c.done
		err = c.Conn.Close()
	})
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}
