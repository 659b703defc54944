package nodelifecycle

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/leasehold/leasehold/internal/slots"
)

// nodeState is everything the controller remembers of one node between
// passes: what classify saw (known, uid, seen) and what assessHealth saw
// (health). It was two maps keyed by name, each looked up and written for
// every node on every pass: four string-hashing map operations per node
// per pass, where the table needs one lookup (in classify), after which the
// pass reaches the state through its slot.
type nodeState struct {
	name string
	// uid and seen: classify saw the node with uid in pass seen (if known).
	uid  types.UID
	seen uint64
	// health is what assessHealth last saw of the node (if hasHealth).
	health nodeHealth
	// known: classify has seen the node.
	known     bool
	hasHealth bool
}

// nodeTable holds the nodeStates by name, in a chunked arena (package
// slots): a *nodeState stays valid while its node is remembered, and
// growing the table copies nothing. Slot 0 is never used. Owned by the
// controller's goroutine, like the rest of its state.
type nodeTable struct {
	states *slots.Table[nodeState, int32]
}

func newNodeTable() nodeTable {
	return nodeTable{states: slots.New[nodeState, int32](func(s *nodeState, name string) { s.name = name })}
}

func (t *nodeTable) at(id int32) *nodeState { return t.states.At(id) }

// get returns the state of name, nil if the table has none.
func (t *nodeTable) get(name string) *nodeState {
	_, st := t.states.Lookup(name)
	return st
}

// slot returns the slot of name's state, making an empty one if needed.
func (t *nodeTable) slot(name string) int32 {
	id, _ := t.states.Slot(name)
	return id
}

// remove forgets name's state.
func (t *nodeTable) remove(name string) {
	if id, st := t.states.Lookup(name); st != nil {
		t.states.Release(name, id)
	}
}

// all calls fn with every state held, in slot order.
func (t *nodeTable) all(fn func(*nodeState)) {
	t.states.Values(func(s *nodeState) bool { return s.name != "" }, fn)
}
