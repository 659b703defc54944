package apiserver_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/leasehold/leasehold/internal/apiserver"
)

// stalledBody sends a few bytes, tells it was read past them, then stalls
// until released, as a client that announced a large body and sent nothing
// more.
type stalledBody struct {
	first   io.Reader
	stalled *sync.WaitGroup
	once    sync.Once
	release <-chan struct{}
}

func (b *stalledBody) Read(p []byte) (int, error) {
	if n, _ := b.first.Read(p); n > 0 {
		return n, nil
	}
	b.once.Do(b.stalled.Done)
	<-b.release
	return 0, io.ErrUnexpectedEOF
}

// Bodies that announce the 3 MiB limit and send 10 bytes cost what they
// sent, not what they announced: 50 of them held 150 MiB when the announced
// size was allocated up front.
func TestStalledAnnouncedBodiesCostWhatWasSent(t *testing.T) {
	h := newDirectHandler(t)
	path := leasePath(t, h.api, "stall", "l")
	const streams = 50
	var stalled, done sync.WaitGroup
	stalled.Add(streams)
	release := make(chan struct{})
	codes := make(chan int, streams)
	var before, during runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range streams {
		req := httptest.NewRequest(http.MethodPut, path, &stalledBody{first: strings.NewReader(`{"apiVersi`), stalled: &stalled, release: release})
		req.ContentLength = apiserver.MaxRequestBodyBytes
		req.Header.Set("Content-Type", "application/json")
		done.Add(1)
		go func() {
			defer done.Done()
			rec := httptest.NewRecorder()
			h.api.ServeHTTP(rec, req)
			codes <- rec.Code
		}()
	}
	stalled.Wait()
	runtime.ReadMemStats(&during)
	close(release)
	done.Wait()
	close(codes)
	for code := range codes {
		if code != http.StatusBadRequest {
			t.Errorf("a body cut short answered %d, want 400", code)
		}
	}
	if got := during.TotalAlloc - before.TotalAlloc; got > streams*256<<10 {
		t.Fatalf("%d stalled bodies allocated %d KiB, want under 256 KiB each", streams, got>>10)
	}
}
