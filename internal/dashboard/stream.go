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

// frame is one published tick: the summary (already JSON) and the heat map.
type frame struct {
	summary []byte
	heat    []byte
	at      time.Time
	// next is closed when a newer frame is published.
	next chan struct{}
}

// publisher hands the latest frame to every stream.
type publisher struct {
	mu     sync.Mutex
	latest *frame
}

func newPublisher() *publisher {
	return &publisher{latest: &frame{next: make(chan struct{})}}
}

func (p *publisher) publish(summary, heat []byte, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.latest
	p.latest = &frame{summary: summary, heat: heat, at: at, next: make(chan struct{})}
	close(old.next)
}

func (p *publisher) current() *frame {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.latest
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
// the stream id, then on every tick the summary, the heat map when it
// changed (base64, one byte per node lease), and the view's rows when they
// changed; rows also follow at once when the page posts a new view.
func (d *Dashboard) serveEvents(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	id, st := d.streams.add()
	defer d.streams.remove(id)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	var lastHeat, lastRows []byte
	write := func(event string, data []byte) error {
		_, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data)
		return err
	}
	// send writes a tick: the summary, the heat map if it changed, and
	// the rows if they changed.
	send := func(f *frame) (err error) {
		if f.summary == nil { // nothing published yet
			return nil
		}
		if err := write("summary", f.summary); err != nil {
			return err
		}
		if !bytes.Equal(f.heat, lastHeat) {
			if err := write("heat", []byte(base64.StdEncoding.EncodeToString(f.heat))); err != nil {
				return err
			}
			lastHeat = f.heat
		}
		lastRows, err = d.writeRows(write, st, lastRows)
		return err
	}
	err := write("hello", []byte(`{"id":"`+id+`"}`))
	f := d.pub.current()
	if err == nil {
		err = send(f)
	}
	for err == nil {
		flusher.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-f.next:
			f = d.pub.current()
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
