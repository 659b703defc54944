package connguard

import (
	"net"
	"sync"
	"time"
)

// refusalLogInterval is how often, at most, refused connections are logged.
const refusalLogInterval = 10 * time.Second

// limitListener accepts at most the guard's limit of open connections and
// closes every connection beyond it as soon as it is accepted, which a
// client sees as an immediate end of stream rather than a hang in the
// kernel's backlog.
type limitListener struct {
	net.Listener
	g *Guard
}

// Accept implements net.Listener. It returns only connections within the
// limit; the ones it refuses never leave it.
func (l limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.g.open.Add(1) <= int64(l.g.files.connections) {
			return &countedConn{Conn: c, g: l.g}, nil
		}
		l.g.open.Add(-1)
		_ = c.Close()
		l.g.metrics.refused.Inc()
		if n, due := l.g.refusals.note(time.Now()); due {
			l.g.log.Warn("refusing connections: the connection limit is reached",
				"refused", n, "limit", l.g.files.connections, "every", refusalLogInterval.String())
		}
	}
}

// countedConn gives its place back when closed (once, however often Close
// is called).
type countedConn struct {
	net.Conn
	g    *Guard
	once sync.Once
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.g.open.Add(-1) })
	return err
}
