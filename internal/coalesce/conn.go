package coalesce

import (
	"errors"
	"net"
	"runtime"
	"sync"
	"time"
)

// maxPendingWrite bounds the bytes a connection holds for its writer: past
// it, Write blocks until the writer has sent them, so a peer that stops
// reading still pushes back on the writer as with a plain connection.
const maxPendingWrite = 256 << 10

// keepBuffer is the largest buffer a connection keeps between bursts; a
// larger one (a long list response) is left to the garbage collector so
// that idle connections hold little memory.
const keepBuffer = 64 << 10

// closeFlushTimeout bounds how long Close waits for pending bytes (a GOAWAY
// frame, a TLS close_notify) to reach a peer before closing anyway.
const closeFlushTimeout = time.Second

// Listener wraps a listener (the TCP one, under TLS) so that every
// connection it accepts is a Conn.
type Listener struct{ net.Listener }

// Accept implements net.Listener.
func (l Listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return NewConn(c), nil
}

// Conn is a net.Conn whose Write hands bytes to the connection's writer
// goroutine and returns. Invariants: bytes reach the peer in the order they
// were written; a write error is sticky and every later Write returns it;
// the writer goroutine exits before Close returns.
type Conn struct {
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

	// writeDeadline is the write deadline last set (see SetWriteDeadline);
	// deadlineBelow says whether the underlying connection has it, and
	// waiting counts the Writes waiting for the writer.
	writeDeadline time.Time
	deadlineBelow bool
	waiting       int
}

// NewConn starts c's writer goroutine; Close stops it.
func NewConn(c net.Conn) *Conn {
	cc := &Conn{
		Conn: c,
		kick: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	cc.drained = sync.NewCond(&cc.mu)
	go cc.run()
	return cc
}

// Write implements net.Conn: it queues p for the writer and returns, or
// blocks while maxPendingWrite bytes are queued already.
func (c *Conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.err == nil && !c.closing && len(c.pending) >= maxPendingWrite {
		c.applyDeadlineLocked()
		c.waiting++
		c.drained.Wait()
		c.waiting--
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

// SetWriteDeadline implements net.Conn. A Write returns at once unless
// maxPendingWrite bytes wait for the writer, so the deadline matters only to
// a Write that waits: that Write gives it to the underlying connection,
// where it ends the writer's stuck send and, with the send's error, the
// wait; a deadline set while a Write waits goes down at once. Otherwise it
// is only recorded. HTTP/2 sets a deadline before and clears it after every
// flush (its WriteByteTimeout); passing both down re-armed the socket's
// timer twice per response: 1.3% of the server's CPU profile under bench
// max, and 320-356 ns per pair against 105-115 ns recorded
// (BenchmarkWriteDeadlinePair).
func (c *Conn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writeDeadline = t
	if !c.deadlineBelow && c.waiting == 0 {
		return nil
	}
	c.deadlineBelow = !t.IsZero()
	return c.Conn.SetWriteDeadline(t)
}

// SetDeadline implements net.Conn: the read deadline goes down at once, the
// write deadline as SetWriteDeadline says.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// applyDeadlineLocked gives the recorded write deadline to the underlying
// connection before a Write waits for the writer.
func (c *Conn) applyDeadlineLocked() {
	if c.deadlineBelow || c.writeDeadline.IsZero() {
		return
	}
	if err := c.Conn.SetWriteDeadline(c.writeDeadline); err == nil {
		c.deadlineBelow = true
	}
}

// run is the connection's writer. It owns the underlying connection's
// Write; Close stops it.
func (c *Conn) run() {
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
func (c *Conn) send() bool {
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
func (c *Conn) Close() error {
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
