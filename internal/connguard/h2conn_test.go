package connguard

import (
	"bytes"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/http2"
)

// okHandler answers every request, after checking it came over TLS.
func okHandler(t *testing.T) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			t.Errorf("request %s has no TLS state", r.URL.Path)
		}
		_, _ = io.WriteString(w, r.Proto)
	})
}

// TestRequestsPassTheGuard: an ordinary HTTP/2 client and an HTTP/1.1 one
// are served, with Request.TLS set, through the guarded connection.
func TestRequestsPassTheGuard(t *testing.T) {
	s := startGuarded(t, Config{}, okHandler(t))
	for _, proto := range []string{"h2", "http/1.1"} {
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, NextProtos: []string{proto}}, ForceAttemptHTTP2: proto == "h2"}
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://" + s.addr + "/x")
		if err != nil {
			t.Fatalf("%s: %v", proto, err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		tr.CloseIdleConnections()
		want := map[string]string{"h2": "HTTP/2.0", "http/1.1": "HTTP/1.1"}[proto]
		if resp.StatusCode != http.StatusOK || string(body) != want {
			t.Errorf("%s: %d %q, want 200 %q", proto, resp.StatusCode, body, want)
		}
	}
}

// TestRapidResetGetsGoAway floods one connection with HEADERS+RST_STREAM
// pairs: it gets GOAWAY(ENHANCE_YOUR_CALM) and is closed, while a client
// that resets less than its burst is still served.
func TestRapidResetGetsGoAway(t *testing.T) {
	s := startGuarded(t, Config{HTTP2MaxResetsPerSecond: 25}, okHandler(t)) // burst 50

	calm, fr := dialH2(t, s.addr)
	id := uint32(1)
	for ; id < 2*40; id += 2 {
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: getHeaders("/calm"), EndStream: true, EndHeaders: true}); err != nil {
			t.Fatal(err)
		}
		if err := fr.WriteRSTStream(id, http2.ErrCodeCancel); err != nil {
			t.Fatal(err)
		}
	}
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: getHeaders("/calm"), EndStream: true, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	_ = calm.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("a connection with 40 resets lost its request: %v", err)
		}
		if ga, ok := f.(*http2.GoAwayFrame); ok {
			t.Fatalf("a connection with 40 resets got GOAWAY %v", ga.ErrCode)
		}
		if d, ok := f.(*http2.DataFrame); ok && d.StreamID == id {
			break
		}
	}

	flood, fr := dialH2(t, s.addr)
	stop := make(chan struct{})
	wrote := make(chan uint32, 1)
	go func() {
		id := uint32(1)
		defer func() { wrote <- id }()
		for ; id < 1<<20; id += 2 {
			select {
			case <-stop:
				return
			default:
			}
			if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: getHeaders("/flood"), EndStream: true, EndHeaders: true}) != nil ||
				fr.WriteRSTStream(id, http2.ErrCodeCancel) != nil {
				return
			}
		}
	}()
	ga, took := goAwayOf(t, flood, 10*time.Second)
	close(stop)
	last := <-wrote
	if ga == nil || ga.ErrCode != http2.ErrCodeEnhanceYourCalm {
		t.Fatalf("flooding connection ended after %v with GOAWAY %+v, want ENHANCE_YOUR_CALM", took, ga)
	}
	t.Logf("flood: GOAWAY(last stream %d) after %v; client wrote up to stream %d", ga.LastStreamID, took, last)
	if got := s.counter(t, s.g.metrics.closed.WithLabelValues(reasonRapidReset)); got != 1 {
		t.Errorf("rapid_reset closings = %v, want 1", got)
	}
}

// TestSlowHeadersAreClosed: a client that stops during the preface or a
// header block is answered with GOAWAY and closed once ReadHeaderTimeout
// passes (plus the linger that lets it read the GOAWAY).
func TestSlowHeadersAreClosed(t *testing.T) {
	const timeout = 300 * time.Millisecond
	s := startGuarded(t, Config{ReadHeaderTimeout: timeout}, okHandler(t))
	for name, send := range map[string]func(*tls.Conn){
		"nothing after the handshake": func(*tls.Conn) {},
		"half a preface":              func(c *tls.Conn) { _, _ = c.Write([]byte(http2.ClientPreface[:10])) },
		"a header block without its end": func(c *tls.Conn) {
			fr := http2.NewFramer(c, nil)
			_, _ = c.Write([]byte(http2.ClientPreface))
			_ = fr.WriteSettings()
			_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: getHeaders("/slow"), EndStream: true})
		},
	} {
		c := dialTLS(t, s.addr)
		send(c)
		ga, took := goAwayOf(t, c, 10*time.Second)
		if ga == nil || ga.ErrCode != http2.ErrCodeEnhanceYourCalm {
			t.Errorf("%s: closed after %v with GOAWAY %+v, want ENHANCE_YOUR_CALM", name, took, ga)
		}
		if took < timeout || took > timeout+goAwayLinger+2*time.Second {
			t.Errorf("%s: closed after %v, want about %v + %v", name, took, timeout, goAwayLinger)
		}
	}
	if got := s.counter(t, s.g.metrics.closed.WithLabelValues(reasonHeaderTimeout)); got != 3 {
		t.Errorf("header_timeout closings = %v, want 3", got)
	}
}

// TestGoAwayWaitsForTheFrameInFlight: a GOAWAY decided while the server
// has written half a frame goes out after that frame, never inside it.
func TestGoAwayWaitsForTheFrameInFlight(t *testing.T) {
	g, err := New(Config{}, prometheus.NewRegistry(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	serverSide, clientSide := net.Pipe()
	srv := tls.Server(serverSide, &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}})
	cli := tls.Client(clientSide, &tls.Config{InsecureSkipVerify: true})
	defer func() { _ = cli.Close(); _ = srv.Close() }()
	// The framer reuses a frame's memory on the next ReadFrame, so the
	// reader copies out what the test checks before reading on.
	type seen struct {
		kind             http2.FrameType
		streamID, lastID uint32
		dataLen          int
		errCode          http2.ErrCode
	}
	frames := make(chan seen, 4)
	go func() {
		defer close(frames)
		fr := http2.NewFramer(nil, cli)
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			s := seen{kind: f.Header().Type, streamID: f.Header().StreamID}
			switch f := f.(type) {
			case *http2.DataFrame:
				s.dataLen = len(f.Data())
			case *http2.GoAwayFrame:
				s.lastID, s.errCode = f.LastStreamID, f.ErrCode
			}
			frames <- s
		}
	}()
	hc := g.newH2Conn(srv)
	defer func() { _ = hc.Close() }()

	var data bytes.Buffer
	_ = http2.NewFramer(&data, nil).WriteData(7, false, bytes.Repeat([]byte("d"), 1000))
	half := data.Len() / 2
	if _, err := hc.Write(data.Bytes()[:half]); err != nil {
		t.Fatal(err)
	}
	hc.maxStreamID.Store(9)
	hc.trip(reasonRapidReset)
	if _, err := hc.Write(data.Bytes()[half:]); err != nil {
		t.Fatal(err)
	}
	if d := <-frames; d.kind != http2.FrameData || d.streamID != 7 || d.dataLen != 1000 {
		t.Fatalf("first frame %+v, want stream 7's 1000-byte DATA", d)
	}
	if ga := <-frames; ga.kind != http2.FrameGoAway || ga.lastID != 9 || ga.errCode != http2.ErrCodeEnhanceYourCalm {
		t.Fatalf("second frame %+v, want GOAWAY(9, ENHANCE_YOUR_CALM)", ga)
	}
}

// TestUnansweredPingCloses: a connection with a request in flight (so the
// idle timeout does not apply) whose client stops answering is pinged after
// HTTP2ReadIdleTimeout and closed after HTTP2PingTimeout.
func TestUnansweredPingCloses(t *testing.T) {
	const readIdle, pingTimeout = 300 * time.Millisecond, 300 * time.Millisecond
	s := startGuarded(t, Config{HTTP2ReadIdleTimeout: readIdle, HTTP2PingTimeout: pingTimeout},
		http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	c, fr := dialH2(t, s.addr)
	// A request whose body never comes keeps its handler waiting.
	if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: getHeaders("/wait"), EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(10 * time.Second))
	pinged := false
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			break
		}
		if _, ok := f.(*http2.PingFrame); ok {
			pinged = true
		}
	}
	took := time.Since(start)
	if !pinged || took < readIdle+pingTimeout || took > readIdle+pingTimeout+3*time.Second {
		t.Errorf("connection closed after %v (pinged: %v), want a ping and about %v", took, pinged, readIdle+pingTimeout)
	}
}
