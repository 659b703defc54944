package connguard

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// goawayHandler answers every request with "ok" and counts the client
// connections (remote addresses) requests arrived on. /stream is a
// watch-like long request: a line every 20 ms until stop closes.
type goawayHandler struct {
	mu    sync.Mutex
	conns map[string]int
	stop  chan struct{}
}

func (h *goawayHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.conns[r.RemoteAddr]++
	h.mu.Unlock()
	_, _ = io.Copy(io.Discard, r.Body)
	if r.URL.Path != "/stream" {
		_, _ = io.WriteString(w, "ok")
		return
	}
	for i := 0; ; i++ {
		select {
		case <-h.stop:
			return
		case <-r.Context().Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
		if _, err := fmt.Fprintf(w, "line %d\n", i); err != nil {
			return
		}
		w.(http.Flusher).Flush()
	}
}

func (h *goawayHandler) connections() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns)
}

// h2Client is Go's HTTP/2 client (the transport client-go uses) trusting
// any certificate.
func h2Client(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// TestGoawayChanceSpreadsClients: with --goaway-chance at its maximum, a
// real HTTP/2 client sending 2,000 GETs and PUTs from 8 goroutines over
// what starts as one connection is moved to new connections again and
// again (about one request in 50), no request fails, and a watch-like
// stream opened first keeps streaming on its old connection throughout.
func TestGoawayChanceSpreadsClients(t *testing.T) {
	h := &goawayHandler{conns: map[string]int{}, stop: make(chan struct{})}
	s := startGuarded(t, Config{GoawayChance: MaxGoawayChance}, h)
	client := h2Client(t)
	base := "https://" + s.addr

	resp, err := client.Get(base + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.ProtoMajor != 2 {
		t.Fatalf("stream over %s, want HTTP/2", resp.Proto)
	}
	lines := bufio.NewScanner(resp.Body)
	if !lines.Scan() {
		t.Fatalf("no first line from the stream: %v", lines.Err())
	}

	const workers, perWorker = 8, 250
	var wg sync.WaitGroup
	errs := make(chan error, workers*perWorker)
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				var req *http.Request
				var err error
				if i%2 == 0 {
					req, err = http.NewRequest(http.MethodGet, base+"/get", nil)
				} else {
					req, err = http.NewRequest(http.MethodPut, base+"/put", strings.NewReader(fmt.Sprintf("body %d/%d", w, i)))
				}
				if err != nil {
					errs <- err
					return
				}
				resp, err := client.Do(req)
				if err != nil {
					errs <- fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
					continue
				}
				body, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if err != nil || resp.StatusCode != http.StatusOK || string(body) != "ok" || resp.ProtoMajor != 2 {
					errs <- fmt.Errorf("%s %s: %s %q %v", req.Method, req.URL.Path, resp.Status, body, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// 2,001 requests at 1/50: about 40 GOAWAYs; fewer than 10 new
	// connections has a probability below 1e-8.
	if n := h.connections(); n < 10 {
		t.Errorf("requests came over %d connections, want the client to have reconnected at least 10 times", n)
	}
	// The stream, on the first connection, which got GOAWAY long ago, still
	// delivers.
	for range 3 {
		if !lines.Scan() {
			t.Fatalf("stream ended after the GOAWAYs: %v", lines.Err())
		}
	}
	close(h.stop)
}

// TestGoawayChanceZeroKeepsOneConnection: by default a client keeps its one
// HTTP/2 connection.
func TestGoawayChanceZeroKeepsOneConnection(t *testing.T) {
	h := &goawayHandler{conns: map[string]int{}, stop: make(chan struct{})}
	s := startGuarded(t, Config{}, h)
	client := h2Client(t)
	for range 300 {
		resp, err := client.Get("https://" + s.addr + "/get")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.Header.Get("Connection") != "" {
			t.Fatalf("Connection: %q", resp.Header.Get("Connection"))
		}
	}
	if n := h.connections(); n != 1 {
		t.Errorf("300 requests came over %d connections, want 1", n)
	}
}

// TestGoawayOnlyHTTP2: HTTP/1.1 requests are never closed by the chance
// (as kube-apiserver, which checks for HTTP/2.0), HTTP/2 ones about as
// often as the chance says.
func TestGoawayOnlyHTTP2(t *testing.T) {
	h := withGoaway(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), MaxGoawayChance)
	closed := map[int]int{}
	const n = 20000
	for _, major := range []int{1, 2} {
		for range n {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.ProtoMajor = major
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Header().Get("Connection") == "close" {
				closed[major]++
			}
		}
	}
	if closed[1] != 0 {
		t.Errorf("%d HTTP/1.1 requests got Connection: close", closed[1])
	}
	// Mean 400, standard deviation about 20.
	if closed[2] < 300 || closed[2] > 500 {
		t.Errorf("%d of %d HTTP/2 requests got Connection: close, want about %d", closed[2], n, int(n*MaxGoawayChance))
	}
}

// TestGoawayChanceBounds: kube-apiserver's range and message.
func TestGoawayChanceBounds(t *testing.T) {
	for _, c := range []float64{0, 0.001, 0.02} {
		if _, err := (Config{GoawayChance: c}).withDefaults(); err != nil {
			t.Errorf("chance %v: %v", c, err)
		}
	}
	for _, c := range []float64{-0.001, 0.0201, 1} {
		_, err := (Config{GoawayChance: c}).withDefaults()
		if err == nil || err.Error() != "--goaway-chance can not be less than 0 or greater than 0.02" {
			t.Errorf("chance %v: error %v, want kube-apiserver's", c, err)
		}
	}
}
