package dashboard

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// frame is one published tick: the summary (already JSON) and the heat
// map, with its encodings made once for every stream.
type frame struct {
	seq     uint64
	summary []byte
	heat    *heatMap
	at      time.Time
	// delta is the heat map's change since frame seq-1 (base64), valid if
	// hasDelta; a stream that sent frame seq-1 sends it, any other stream
	// the keyframe.
	delta    []byte
	hasDelta bool
	keyOnce  sync.Once
	key      []byte
	// next is closed when a newer frame is published.
	next chan struct{}
	// old is set (under publisher.mu) when ticks passed without a newer
	// frame: a page that opens waits for the next one.
	old bool
}

// keyframe is the heat map whole (base64), encoded by the first stream
// that needs it: most ticks no stream does.
func (f *frame) keyframe() []byte {
	f.keyOnce.Do(func() { f.key = base64Bytes(f.heat.keyframe()) })
	return f.key
}

func base64Bytes(b []byte) []byte {
	out := make([]byte, base64.StdEncoding.EncodedLen(len(b)))
	base64.StdEncoding.Encode(out, b)
	return out
}

// publisher hands the latest frame to every stream.
type publisher struct {
	mu     sync.Mutex
	latest *frame
}

func newPublisher() *publisher {
	return &publisher{latest: &frame{next: make(chan struct{})}}
}

func (p *publisher) publish(summary []byte, heat *heatMap, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.latest
	f := &frame{seq: old.seq + 1, summary: summary, heat: heat, at: at, next: make(chan struct{})}
	if d, ok := heat.delta(old.heat); ok {
		f.delta, f.hasDelta = base64Bytes(d), true
	}
	p.latest = f
	close(old.next)
}

// current is the latest frame, and whether it is out of date.
func (p *publisher) current() (*frame, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.latest, p.latest.old
}

// stale notes that a tick passed without a frame.
func (p *publisher) stale() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.latest.old = true
}

// stream is one page's connection: its view, and a poke when it changes.
type stream struct {
	mu      sync.Mutex
	view    View
	changed chan struct{} // buffered 1
}

// streams are the open pages by id.
type streams struct {
	mu   sync.Mutex
	byID map[string]*stream
}

func (s *streams) add() (string, *stream) {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	id := hex.EncodeToString(b[:])
	st := &stream{view: View{Limit: 50}, changed: make(chan struct{}, 1)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byID[id] = st
	return id, st
}

func (s *streams) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID)
}

func (s *streams) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byID, id)
}

func (s *streams) get(id string) *stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byID[id]
}

// serveEvents is the page's one stream (Server-Sent Events): "hello" with
// the stream id, then on every tick the summary, the heat map's changes
// ("heatdelta") or, on the first tick and whenever the page missed a tick
// or the map's layout changed, the whole map ("heat"), and the view's rows
// when they changed; rows also follow at once when the page posts a new
// view.
func (d *Dashboard) serveEvents(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	id, st := d.streams.add()
	defer d.streams.remove(id)
	select {
	case d.opened <- struct{}{}:
	default:
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	var lastRows []byte
	// sentSeq is the frame whose heat map the page holds (0: none).
	var sentSeq uint64
	write := func(event string, data []byte) error {
		_, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data)
		return err
	}
	// send writes a tick: the summary, the heat map's change, and the
	// rows if they changed.
	send := func(f *frame) (err error) {
		if f.summary == nil { // nothing published yet
			return nil
		}
		if err := write("summary", f.summary); err != nil {
			return err
		}
		switch {
		case f.hasDelta && f.seq == sentSeq+1:
			if len(f.delta) > 0 {
				err = write("heatdelta", f.delta)
			}
		case f.seq != sentSeq:
			err = write("heat", f.keyframe())
		}
		if err != nil {
			return err
		}
		sentSeq = f.seq
		lastRows, err = d.writeRows(write, st, lastRows)
		return err
	}
	err := write("hello", []byte(`{"id":"`+id+`"}`))
	f, old := d.pub.current()
	if err == nil && !old {
		err = send(f)
	}
	for err == nil {
		flusher.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-f.next:
			f, _ = d.pub.current()
			err = send(f)
		case <-st.changed:
			// A new view: its rows at once, the rest with the next tick.
			lastRows, err = d.writeRows(write, st, nil)
		}
	}
}

// writeRows sends the stream's rows unless they equal last; it returns
// what it sent (or last).
func (d *Dashboard) writeRows(write func(string, []byte) error, st *stream, last []byte) ([]byte, error) {
	st.mu.Lock()
	v := st.view
	st.mu.Unlock()
	b, err := json.Marshal(d.fleet.Rows(v, d.clock.Now()))
	if err != nil {
		return last, fmt.Errorf("encoding rows: %w", err)
	}
	if bytes.Equal(b, last) {
		return last, nil
	}
	return b, write("rows", b)
}

// serveView sets a stream's view: POST /view?id=ID with a View as JSON.
func (d *Dashboard) serveView(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST a view", http.StatusMethodNotAllowed)
		return
	}
	st := d.streams.get(r.URL.Query().Get("id"))
	if st == nil {
		http.Error(w, "no such stream", http.StatusNotFound)
		return
	}
	var v View
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&v); err != nil {
		http.Error(w, "view: "+err.Error(), http.StatusBadRequest)
		return
	}
	st.mu.Lock()
	st.view = v
	st.mu.Unlock()
	select {
	case st.changed <- struct{}{}:
	default:
	}
	w.WriteHeader(http.StatusNoContent)
}
