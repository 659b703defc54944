package robustness

import (
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"k8s.io/apimachinery/pkg/watch"
)

// The checkers must catch what they are for: histories made by hand, each
// with one violation, and the same histories without it.

func op(client int, call, ret int64, in input, out output) porcupine.Operation {
	return porcupine.Operation{ClientId: client, Call: call, Return: ret, Input: in, Output: out}
}

func TestModelCatchesViolations(t *testing.T) {
	create := op(0, 0, 10, input{Kind: opCreate, Key: "k", Value: "a"}, output{Result: resOK, Value: "a", RV: 5, UID: "u1"})
	cases := []struct {
		name  string
		ops   []porcupine.Operation
		legal bool
	}{
		{"read after create", []porcupine.Operation{create, op(1, 20, 30, input{Kind: opGet, Key: "k"}, output{Result: resOK, Value: "a", RV: 5, UID: "u1"})}, true},
		{"acknowledged create lost", []porcupine.Operation{create, op(1, 20, 30, input{Kind: opGet, Key: "k"}, output{Result: resNotFound})}, false},
		{"stale read", []porcupine.Operation{create,
			op(0, 20, 30, input{Kind: opPatch, Key: "k", Value: "b"}, output{Result: resOK, Value: "b", RV: 7, UID: "u1"}),
			op(1, 40, 50, input{Kind: opRead, Key: "k"}, output{Result: resOK, Value: "a", RV: 5, UID: "u1"})}, false},
		{"update with a stale resourceVersion accepted", []porcupine.Operation{create,
			op(0, 20, 30, input{Kind: opPatch, Key: "k", Value: "b"}, output{Result: resOK, Value: "b", RV: 7, UID: "u1"}),
			op(1, 40, 50, input{Kind: opUpdate, Key: "k", Value: "c", RV: 5}, output{Result: resOK, Value: "c", RV: 9, UID: "u1"})}, false},
		{"update with the current resourceVersion", []porcupine.Operation{create,
			op(1, 40, 50, input{Kind: opUpdate, Key: "k", Value: "c", RV: 5}, output{Result: resOK, Value: "c", RV: 9, UID: "u1"})}, true},
		{"resourceVersion going back", []porcupine.Operation{create,
			op(1, 40, 50, input{Kind: opPatch, Key: "k", Value: "c"}, output{Result: resOK, Value: "c", RV: 4, UID: "u1"})}, false},
		{"delete with a wrong uid accepted", []porcupine.Operation{create,
			op(1, 40, 50, input{Kind: opDelete, Key: "k", UID: "u2"}, output{Result: resOK})}, false},
		{"delete with the right uid refused", []porcupine.Operation{create,
			op(1, 40, 50, input{Kind: opDelete, Key: "k", UID: "u1"}, output{Result: resConflict})}, false},
		{"create over an existing lease", []porcupine.Operation{create,
			op(1, 40, 50, input{Kind: opCreate, Key: "k", Value: "x"}, output{Result: resOK, Value: "x", RV: 8, UID: "u2"})}, false},
		{"unknown write seen later", []porcupine.Operation{create,
			op(0, 20, 1000, input{Kind: opPatch, Key: "k", Value: "b"}, output{Result: resUnknown}),
			op(1, 40, 50, input{Kind: opGet, Key: "k"}, output{Result: resOK, Value: "b", RV: 7, UID: "u1"}),
			op(1, 60, 70, input{Kind: opUpdate, Key: "k", Value: "c", RV: 7}, output{Result: resOK, Value: "c", RV: 8, UID: "u1"})}, true},
		{"unknown write never happened", []porcupine.Operation{create,
			op(0, 20, 1000, input{Kind: opPatch, Key: "k", Value: "b"}, output{Result: resUnknown}),
			op(1, 40, 50, input{Kind: opGet, Key: "k"}, output{Result: resOK, Value: "a", RV: 5, UID: "u1"})}, true},
		{"unknown write seen, then undone", []porcupine.Operation{create,
			op(0, 20, 1000, input{Kind: opPatch, Key: "k", Value: "b"}, output{Result: resUnknown}),
			op(1, 40, 50, input{Kind: opGet, Key: "k"}, output{Result: resOK, Value: "b", RV: 7, UID: "u1"}),
			op(1, 60, 70, input{Kind: opGet, Key: "k"}, output{Result: resOK, Value: "a", RV: 5, UID: "u1"})}, false},
	}
	model := leaseModel.ToModel()
	for _, c := range cases {
		res := porcupine.CheckOperationsTimeout(model, c.ops, 10*time.Second)
		if got := res == porcupine.Ok; got != c.legal {
			t.Errorf("%s: porcupine says %s, want legal=%v", c.name, res, c.legal)
		}
	}
}

func TestWatchCheckCatchesViolations(t *testing.T) {
	ev := func(typ watch.EventType, key, value string, rv int64) event {
		return event{Type: typ, Key: key, Value: value, RV: rv, UID: "u-" + key}
	}
	full := []event{ev(watch.Added, "a", "1", 11), ev(watch.Modified, "a", "2", 12), ev(watch.Added, "b", "1", 14), ev(watch.Deleted, "a", "2", 15)}
	ack := []record{{In: input{Kind: opPatch, Key: "a", Value: "2"}, Out: output{Result: resOK, Value: "2", RV: 12}}}
	cases := []struct {
		name    string
		streams []*stream
		records []record
		want    string // part of the violation, "" for none
	}{
		{"consistent", []*stream{{StartRV: 10, Events: full}, {StartRV: 12, Events: full[2:]}}, ack, ""},
		{"gap", []*stream{{StartRV: 10, Events: full}, {StartRV: 10, Events: append([]event{full[0]}, full[2:]...)}}, nil, "a gap"},
		{"acknowledged write missing", []*stream{{StartRV: 10, Events: append([]event{full[0]}, full[2:]...)}}, ack, "missed the acknowledged"},
		{"duplicate", []*stream{{StartRV: 10, Events: append(append([]event{}, full[:2]...), full[1:]...)}}, nil, "duplicate"},
		{"from before the start", []*stream{{StartRV: 12, Events: full[1:]}}, nil, "out of order"},
		{"different events at one resourceVersion", []*stream{{StartRV: 10, Events: full}, {StartRV: 13, Events: []event{ev(watch.Added, "b", "X", 14)}}}, nil, "another stream"},
		{"bookmark going back", []*stream{{StartRV: 10, Events: full, Bookmarks: []bookmark{{RV: 13, After: 3}}}}, nil, "bookmark 13"},
		{"event behind a bookmark", []*stream{{StartRV: 10, Events: full, Bookmarks: []bookmark{{RV: 14, After: 2}}}}, nil, "behind a bookmark"},
		{"bookmark covers a missed event", []*stream{{StartRV: 10, Events: full}, {StartRV: 10, Events: full[:1], Bookmarks: []bookmark{{RV: 13, After: 1}}}}, nil, "a gap"},
		{"replay stopped short", []*stream{{StartRV: 10, Events: full}, {StartRV: 10, Events: full[:2], Replay: true, ReachRV: 15}}, nil, "stopped"},
		{"replay answered 410", []*stream{{StartRV: 10, Events: full}, {StartRV: 10, Gone: true, Replay: true, ReachRV: 15}}, nil, ""},
		{"ADDED while present", []*stream{{StartRV: 10, Events: []event{ev(watch.Added, "a", "1", 11), ev(watch.Added, "a", "2", 12)}}}, nil, "while present"},
	}
	for _, c := range cases {
		v := checkWatches(c.streams, c.records)
		switch {
		case c.want == "" && len(v) > 0:
			t.Errorf("%s: violations %q, want none", c.name, v)
		case c.want != "" && !strings.Contains(strings.Join(v, "\n"), c.want):
			t.Errorf("%s: violations %q, want one saying %q", c.name, v, c.want)
		}
	}
}
