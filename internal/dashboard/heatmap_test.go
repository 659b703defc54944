package dashboard

import (
	"bufio"
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// heatByteAt is web/app.js's heatByte in Go: the colour index the page
// draws for a cell at now.
func heatByteAt(code, dur uint16, now time.Time) byte {
	switch {
	case code == cellNever || dur == 0:
		return 0
	case code == cellOld:
		return 250
	}
	nowU := now.UnixMilli() / cellUnit.Milliseconds() % cellModulus
	ageU := (nowU - int64(code-1) + cellModulus) % cellModulus
	return byte(min(250, 1+ageU*10/int64(dur)))
}

func heatBytes(h *heatMap, now time.Time) []byte {
	out := make([]byte, len(h.codes))
	for i := range h.codes {
		out[i] = heatByteAt(h.codes[i], h.durs[i], now)
	}
	return out
}

// TestCellEncoding checks that the page's colour from a cell's code is
// HeatByte's, within the code's 100 ms resolution, across the code's wrap
// and for renewals in the future.
func TestCellEncoding(t *testing.T) {
	// now values just before and after the code wraps around.
	wrap := time.UnixMilli(cellModulus * cellUnit.Milliseconds() * 300000)
	for _, now := range []time.Time{t0, wrap.Add(-time.Second), wrap, wrap.Add(1234 * time.Millisecond)} {
		for _, dur := range []time.Duration{4 * time.Second, 40 * time.Second, time.Hour} {
			tolerance := 1 + int(10*time.Second/dur)
			for age := -10 * time.Second; age < 3*dur; age += dur / 97 {
				renew := now.Add(-age)
				st, ratio := Classify(renew, dur, now)
				want := HeatByte(st, ratio)
				code, d := encodeCell(renew, dur, now)
				got := heatByteAt(code, d, now)
				if age >= maxCellAge {
					if code != cellOld {
						t.Errorf("now %v duration %v age %v: code %d, want cellOld past maxCellAge", now, dur, age, code)
					}
					continue
				}
				if diff := int(got) - int(want); diff > tolerance || diff < -tolerance {
					t.Errorf("now %v duration %v age %v: page draws %d, HeatByte %d", now, dur, age, got, want)
				}
			}
		}
	}
	if code, _ := encodeCell(time.Time{}, time.Minute, t0); code != cellNever {
		t.Errorf("never renewed: code %d, want cellNever", code)
	}
	if code, _ := encodeCell(t0, 0, t0); code != cellNever {
		t.Errorf("no duration: code %d, want cellNever", code)
	}
}

// applyDelta is web/app.js's delta decoding in Go.
func applyDelta(t *testing.T, codes, durs []uint16, b []byte) {
	t.Helper()
	i := -1
	for len(b) > 0 {
		gap, n := binary.Uvarint(b)
		if n <= 0 || len(b) < n+4 {
			t.Fatalf("truncated delta entry at %x", b)
		}
		i += int(gap)
		codes[i] = binary.LittleEndian.Uint16(b[n:])
		durs[i] = binary.LittleEndian.Uint16(b[n+2:])
		b = b[n+4:]
	}
}

func TestHeatDelta(t *testing.T) {
	n := 1000
	prev := &heatMap{layout: 1, codes: make([]uint16, n), durs: make([]uint16, n)}
	for i := range n {
		prev.codes[i], prev.durs[i] = uint16(i+1), 40
	}
	next := &heatMap{layout: 1, codes: append([]uint16(nil), prev.codes...), durs: append([]uint16(nil), prev.durs...)}
	for _, i := range []int{0, 1, 200, 999} {
		next.codes[i] = 7
	}
	next.durs[500] = 10
	d, ok := next.delta(prev)
	if !ok || len(d) != 5*5+3 { // five entries; the gaps of 199, 300 and 499 take two bytes
		t.Fatalf("delta of five cells: %d bytes (ok %v)", len(d), ok)
	}
	codes, durs := append([]uint16(nil), prev.codes...), append([]uint16(nil), prev.durs...)
	applyDelta(t, codes, durs, d)
	for i := range n {
		if codes[i] != next.codes[i] || durs[i] != next.durs[i] {
			t.Fatalf("cell %d after the delta: %d/%d, want %d/%d", i, codes[i], durs[i], next.codes[i], next.durs[i])
		}
	}
	if d, ok := prev.delta(prev); !ok || len(d) != 0 {
		t.Errorf("no change: %d bytes (ok %v), want an empty delta", len(d), ok)
	}
	if _, ok := (&heatMap{layout: 2, codes: next.codes, durs: next.durs}).delta(prev); ok {
		t.Error("a delta across layouts")
	}
	for i := range n {
		next.codes[i]++
	}
	if _, ok := next.delta(prev); ok {
		t.Error("a delta of every cell, where the keyframe is smaller")
	}
	k := next.keyframe()
	if len(k) != 4+4*n || binary.LittleEndian.Uint32(k) != uint32(n) || binary.LittleEndian.Uint16(k[4+2*3:]) != next.codes[3] ||
		binary.LittleEndian.Uint16(k[4+2*n+2*500:]) != 10 {
		t.Errorf("keyframe of %d bytes does not hold the cells", len(k))
	}
}

// TestStreamSendsKeyframeThenDeltas reads the page's stream: the whole map
// first, then only a renewed cell, and the whole map again once a lease
// is added (the cells' order changed).
func TestStreamSendsKeyframeThenDeltas(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	f := NewFleet(clk)
	for _, n := range []string{"n1", "n2", "n3"} {
		f.SetLease(lease(NodeLeaseNamespace, n, n, t0, 40, 0))
	}
	d := New(f, clk)
	none := func() map[string]string { return nil }
	d.Publish(none)
	resp := openStream(t, d)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	// next returns the data of the next heat or heatdelta event.
	next := func() (string, []byte) {
		t.Helper()
		event := ""
		for sc.Scan() {
			line := sc.Text()
			if e, ok := strings.CutPrefix(line, "event: "); ok {
				event = e
			}
			if data, ok := strings.CutPrefix(line, "data: "); ok && strings.HasPrefix(event, "heat") {
				b, err := base64.StdEncoding.DecodeString(data)
				if err != nil {
					t.Fatalf("%s: %v", event, err)
				}
				return event, b
			}
		}
		t.Fatalf("stream ended: %v", sc.Err())
		return "", nil
	}
	if ev, b := next(); ev != "heat" || len(b) != 4+4*3 {
		t.Fatalf("first: %s of %d bytes, want the keyframe of 3 cells", ev, len(b))
	}
	clk.Step(5 * time.Second)
	f.SetLease(lease(NodeLeaseNamespace, "n2", "n2", clk.Now(), 40, 0))
	d.Publish(none)
	ev, b := next()
	code, _ := encodeCell(clk.Now(), 40*time.Second, clk.Now())
	if ev != "heatdelta" || len(b) != 5 || b[0] != 2 || binary.LittleEndian.Uint16(b[1:]) != code {
		t.Fatalf("after n2 renewed: %s %x, want heatdelta of cell 1 with code %d", ev, b, code)
	}
	f.SetLease(lease(NodeLeaseNamespace, "n0", "n0", clk.Now(), 40, 0))
	d.Publish(none)
	if ev, b := next(); ev != "heat" || len(b) != 4+4*4 {
		t.Fatalf("after n0 was added: %s of %d bytes, want the keyframe of 4 cells", ev, len(b))
	}
}

// TestPageOpenedWhileIdleGetsAFreshFrame: while no page is open Run
// publishes nothing and marks the last frame stale; a page that opens
// then asks for a frame (Dashboard.opened) and is sent that one, never
// the stale one.
func TestPageOpenedWhileIdleGetsAFreshFrame(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	f := NewFleet(clk)
	f.SetLease(lease(NodeLeaseNamespace, "n1", "n1", t0, 40, 0))
	d := New(f, clk)
	none := func() map[string]string { return nil }
	d.Publish(none)
	d.pub.stale()
	f.SetLease(lease(NodeLeaseNamespace, "n2", "n2", t0, 40, 0))
	resp := openStream(t, d)
	select {
	case <-d.opened:
	case <-time.After(10 * time.Second):
		t.Fatal("opening the stream did not ask for a frame")
	}
	d.Publish(none)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: {\"now\""); ok {
			if !strings.Contains(data, `"nodeLeases":2,`) {
				t.Fatalf("the first summary is %s, want the fresh one with 2 node leases", data)
			}
			return
		}
	}
	t.Fatalf("stream ended: %v", sc.Err())
}

// openStream opens the page's event stream of d, closed when the test ends.
func openStream(t *testing.T, d *Dashboard) *http.Response {
	t.Helper()
	srv := httptest.NewServer(d.Handler())
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}
