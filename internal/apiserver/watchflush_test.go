package apiserver

import (
	"testing"
	"time"
)

// A lone event is flushed at once; one within the interval of the last
// flush waits for the timer, which fires when the interval is over.
func TestFlushPacer(t *testing.T) {
	p := newFlushPacer(20 * time.Millisecond)
	defer p.stop()
	start := time.Now()
	if !p.due(start) {
		t.Fatal("the first frame is not flushed at once")
	}
	if p.C() != nil {
		t.Fatal("the timer is armed with nothing waiting")
	}
	p.flushed(start)
	if p.due(start.Add(5 * time.Millisecond)) {
		t.Fatal("a frame 5 ms after a flush is flushed at once; want it held to the 20 ms interval")
	}
	c := p.C()
	if c == nil {
		t.Fatal("a held frame armed no timer")
	}
	if p.due(start.Add(6 * time.Millisecond)) {
		t.Fatal("a second held frame is flushed at once")
	}
	select {
	case at := <-c:
		if waited := at.Sub(start); waited < 14*time.Millisecond {
			t.Fatalf("held frames flushed %v after the last flush; want about 15 ms", waited)
		}
	case <-time.After(time.Second):
		t.Fatal("held frames never came due")
	}
	p.flushed(time.Now())
	if p.C() != nil {
		t.Fatal("the timer stays armed after a flush")
	}
	if !p.due(time.Now().Add(25 * time.Millisecond)) {
		t.Fatal("a frame 25 ms after the last flush is held")
	}

	every := newFlushPacer(-1)
	defer every.stop()
	every.flushed(start)
	if !every.due(start) {
		t.Fatal("a negative interval holds a frame; want every frame flushed")
	}
}
