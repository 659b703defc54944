package connguard

import (
	"bytes"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/time/rate"
)

// goAwayLinger is how long a connection the guard sent GOAWAY stays open
// (unread) before it is closed, so that the client reads the GOAWAY instead
// of a reset that could discard it.
const goAwayLinger = time.Second

// errGuardClosed ends the HTTP/2 server's reading of a connection the guard
// answered with GOAWAY.
var errGuardClosed = errors.New("connguard: connection closed after GOAWAY")

// h2Conn is an HTTP/2 connection (the TLS connection, decrypted) as its
// server sees it: it counts the client's RST_STREAM frames, times the
// client preface and header blocks, and can slip a GOAWAY between two of
// the server's frames. Read is called by one goroutine at a time (the
// server's reader); Write by one at a time (the server's writer) but
// concurrently with the guard's GOAWAY.
type h2Conn struct {
	*tls.Conn // ConnectionState: the HTTP/2 server checks it and sets Request.TLS
	g         *Guard
	resets    *rate.Limiter

	// Owned by the reader.
	in         frameScanner
	headerOpen bool // the preface or a header block has begun and not ended
	armed      bool // a header timer runs for it

	maxStreamID atomic.Uint32 // the last stream the client opened
	tripped     atomic.Bool   // GOAWAY is sent or on its way; reads linger
	trippedAt   time.Time     // when GOAWAY was decided; guarded by tmu
	closed      chan struct{} // closed by Close
	closeOnce   sync.Once

	tmu sync.Mutex // guards timer, gen, armedGen and armedAt
	// timer is made by the first arm and Reset by the later ones: a new
	// AfterFunc timer and closure per arm were garbage on every request
	// whose header block spans two reads.
	timer    *time.Timer
	gen      uint64    // bumped on every arm and disarm
	armedGen uint64    // gen of the last arm
	armedAt  time.Time // when the last arm started its timer

	wmu    sync.Mutex // guards out, goAway and the underlying Write
	out    frameScanner
	goAway []byte // a GOAWAY frame waiting for the server's frame in flight to end
}

func (g *Guard) newH2Conn(c *tls.Conn) *h2Conn {
	per := g.cfg.HTTP2MaxResetsPerSecond
	hc := &h2Conn{
		Conn:   c,
		g:      g,
		resets: rate.NewLimiter(rate.Limit(per), per*resetBurstSeconds),
		in:     frameScanner{preface: len(http2.ClientPreface)},
		closed: make(chan struct{}),
	}
	// The server reads the preface as soon as it has the connection: its
	// deadline runs from now.
	hc.headerOpen = true
	hc.arm()
	return hc
}

// Read implements net.Conn for the HTTP/2 server's reader.
func (c *h2Conn) Read(p []byte) (int, error) {
	if c.tripped.Load() {
		return 0, c.linger()
	}
	n, err := c.Conn.Read(p)
	if c.tripped.Load() { // the header timer fired while we read
		return 0, c.linger()
	}
	keep, reason := c.inspect(p[:n])
	if reason != "" {
		c.trip(reason)
		return keep, nil
	}
	if err == nil && c.headerOpen != c.armed {
		if c.headerOpen {
			c.arm()
		} else {
			c.disarm()
		}
	}
	return n, err
}

// inspect follows the client's frames in p. When one of them breaks a
// limit it returns where that frame ends (what the server may still read)
// and why.
func (c *h2Conn) inspect(p []byte) (keep int, reason string) {
	off := 0
	for {
		n, ev := c.in.advance(p[off:])
		off += n
		switch ev {
		case scanMore:
			return len(p), ""
		case scanPreface:
			c.headerOpen = false
		case scanHeader:
			h := c.in.cur
			switch h.typ {
			case http2.FrameHeaders:
				c.headerOpen = true
				if h.streamID > c.maxStreamID.Load() {
					c.maxStreamID.Store(h.streamID)
				}
			case http2.FrameContinuation:
				c.headerOpen = true
			}
		case scanFrameEnd:
			h := c.in.cur
			if h.endsHeaderBlock() {
				c.headerOpen = false
			}
			if h.typ == http2.FrameRSTStream && !c.resets.Allow() {
				return off, reasonRapidReset
			}
		}
	}
}

// arm starts the header deadline; disarm stops it.
func (c *h2Conn) arm() {
	c.tmu.Lock()
	defer c.tmu.Unlock()
	c.armed = true
	c.gen++
	c.armedGen, c.armedAt = c.gen, time.Now()
	if c.timer == nil {
		c.timer = time.AfterFunc(c.g.cfg.ReadHeaderTimeout, c.headerTimeout)
	} else {
		c.timer.Reset(c.g.cfg.ReadHeaderTimeout)
	}
}

func (c *h2Conn) disarm() {
	c.tmu.Lock()
	defer c.tmu.Unlock()
	c.armed = false
	c.gen++
	if c.timer != nil {
		c.timer.Stop()
	}
}

// headerTimeout is the timer's function. It trips the connection only if
// the arm that is current has run its full timeout: a run already under way
// when a disarm stopped the timer, or when a later arm reset it, finds the
// generation moved on or too little time passed since that arm, and does
// nothing.
func (c *h2Conn) headerTimeout() {
	c.tmu.Lock()
	current := c.armed && c.armedGen == c.gen && time.Since(c.armedAt) >= c.g.cfg.ReadHeaderTimeout
	c.tmu.Unlock()
	if current {
		c.trip(reasonHeaderTimeout)
	}
}

// trip answers the connection with GOAWAY(ENHANCE_YOUR_CALM) naming the
// last stream the client opened; the server's next read then lingers and
// fails, and the server closes the connection.
func (c *h2Conn) trip(reason string) {
	c.tmu.Lock()
	first := !c.tripped.Load()
	if first {
		c.trippedAt = time.Now()
		c.tripped.Store(true)
	}
	c.tmu.Unlock()
	if !first {
		return
	}
	c.g.noteClosed(reason, c.RemoteAddr())
	var buf bytes.Buffer
	_ = http2.NewFramer(&buf, nil).WriteGoAway(c.maxStreamID.Load(), http2.ErrCodeEnhanceYourCalm, nil)
	c.wmu.Lock()
	if c.out.atBoundary() {
		_, _ = c.Conn.Write(buf.Bytes())
	} else {
		c.goAway = buf.Bytes()
	}
	c.wmu.Unlock()
	// A read in progress (the header timer's case) returns now.
	_ = c.Conn.SetReadDeadline(time.Now())
}

// linger holds the server's reader until goAwayLinger has passed since the
// GOAWAY (or the connection is closed) and then fails its read. It reads
// nothing: a client still flooding stalls on TCP's window at no cost to
// the server instead of having its frames decrypted and dropped.
func (c *h2Conn) linger() error {
	c.tmu.Lock()
	left := goAwayLinger - time.Since(c.trippedAt)
	c.tmu.Unlock()
	if left > 0 {
		t := time.NewTimer(left)
		defer t.Stop()
		select {
		case <-t.C:
		case <-c.closed:
		}
	}
	return errGuardClosed
}

// Write implements net.Conn for the HTTP/2 server's writer; a pending
// GOAWAY goes out right after the frame in flight ends.
func (c *h2Conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	start, off := 0, 0
	for {
		n, ev := c.out.advance(p[off:])
		off += n
		if ev == scanMore {
			break
		}
		if ev == scanFrameEnd && c.goAway != nil {
			if m, err := c.Conn.Write(p[start:off]); err != nil {
				return start + m, err
			}
			start = off
			_, _ = c.Conn.Write(c.goAway)
			c.goAway = nil
		}
	}
	if start == len(p) {
		return start, nil
	}
	m, err := c.Conn.Write(p[start:])
	return start + m, err
}

// Close implements net.Conn; it also stops the header timer.
func (c *h2Conn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	c.tmu.Lock()
	c.gen++
	if c.timer != nil {
		c.timer.Stop()
	}
	c.tmu.Unlock()
	return c.Conn.Close()
}

var _ net.Conn = (*h2Conn)(nil)
