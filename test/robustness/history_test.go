package robustness

import (
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// record is one operation of the history, as porcupine and a person read
// it: who, what, when (nanoseconds since the run began) and the answer.
type record struct {
	Client int    `json:"client"`
	In     input  `json:"in"`
	Out    output `json:"out"`
	Call   int64  `json:"call"`
	Return int64  `json:"return"`
}

// history collects the records of every client, and the moments the
// server was killed (once it was gone), which bound unknown writes: a
// request in flight to a process can only take effect before it dies.
type history struct {
	base time.Time

	mu      sync.Mutex
	records []record
	kills   []int64
}

func newHistory() *history { return &history{base: time.Now()} }

// now is the history's clock (monotonic).
func (h *history) now() int64 { return int64(time.Since(h.base)) }

func (h *history) add(r record) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r)
}

func (h *history) killed() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.kills = append(h.kills, h.now())
}

// snapshot returns a copy of the records.
func (h *history) snapshot() []record {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]record(nil), h.records...)
}

// operations is the history for porcupine. An unknown write's return is
// the first kill after it was called (it cannot take effect after its
// server died), else after everything else.
func (h *history) operations() []porcupine.Operation {
	h.mu.Lock()
	defer h.mu.Unlock()
	var end int64
	for _, r := range h.records {
		end = max(end, r.Return)
	}
	ops := make([]porcupine.Operation, 0, len(h.records))
	for _, r := range h.records {
		ret := r.Return
		if r.Out.Result == resUnknown {
			ret = end + 1
			for _, k := range h.kills {
				if k >= r.Call {
					ret = k
					break
				}
			}
		}
		ops = append(ops, porcupine.Operation{ClientId: r.Client, Input: r.In, Call: r.Call, Output: r.Out, Return: ret})
	}
	return ops
}
