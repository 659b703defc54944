package nodelifecycle

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/leasehold/leasehold/internal/slots"
	"github.com/leasehold/leasehold/internal/uidbytes"
)

// nodeState is everything the controller remembers of one node between
// passes, in one record: the view of the node the last pass judged (which
// holds its name), what classify saw (known, uid, seen) and what
// assessHealth saw (health). It was two maps keyed by name, each looked up
// and written for every node on every pass: four string-hashing map
// operations per node per pass, where the table needs one lookup (in
// classify), after which the pass reaches the state through its slot.
//
// The view is held here, inline, rather than as a heap object of its own
// in a cache keyed by name on the cluster side, and the record holds the
// node's name once (the watch cache's key string) and a UUID uid as bytes.
// In heap-per-node.sh's profile at 20,000 nodes the table (96-byte records
// and the index) took 134 bytes per node, the view objects 239 and the
// view cache's map 43, besides the name and uid strings they kept (72
// bytes); the table of 160-byte records and its index took 195 with a Go
// map for the index, which is now a slots.Index (see package slots).
type nodeState struct {
	// view is the node as the last pass listed it, valid when known;
	// view.name is the table's key (set when the slot is made).
	view nodeView
	// uid is the node's uid unless oddUID (see nodeTable.setUID).
	uid [16]byte
	// seen: classify saw the node in pass seen, its low 32 bits (compared
	// only with the current pass, after classify marked every node listed
	// and before it forgets the others, so wrapping around is harmless).
	seen uint32
	// known: classify has seen the node and set view and uid.
	known bool
	// oddUID: the uid is not a UUID and is held in nodeTable.oddUIDs.
	oddUID bool
	// hasHealth: health is set.
	hasHealth bool
	// health is what assessHealth last saw of the node (if hasHealth).
	health nodeHealth
}

// nodeTable holds the nodeStates by name, in a chunked arena (package
// slots): a *nodeState stays valid while its node is remembered, and
// growing the table copies nothing. Slot 0 is never used. Owned by the
// controller's goroutine, like the rest of its state.
type nodeTable struct {
	states *slots.Table[nodeState, int32]
	// oddUIDs are the uids that are not canonical UUIDs, by node name: the
	// API server writes none, but a node's uid is compared and reported
	// exactly as written, whatever wrote it.
	oddUIDs map[string]types.UID
}

func newNodeTable() nodeTable {
	return nodeTable{
		states:  slots.New[nodeState, int32](func(s *nodeState) *string { return &s.view.name }),
		oddUIDs: map[string]types.UID{},
	}
}

func (t *nodeTable) at(id int32) *nodeState { return t.states.At(id) }

// lookup returns the slot and state of name, or 0 and nil if the table has
// none.
func (t *nodeTable) lookup(name string) (int32, *nodeState) {
	return t.states.Lookup(name)
}

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
		delete(t.oddUIDs, name)
		t.states.Release(name, id)
	}
}

// all calls fn with every state held, in slot order.
func (t *nodeTable) all(fn func(*nodeState)) {
	t.states.Values(func(s *nodeState) bool { return s.view.name != "" }, fn)
}

// setUID makes uid the uid of st, a state of the table.
func (t *nodeTable) setUID(st *nodeState, uid types.UID) {
	if b, ok := uidbytes.Parse(uid); ok {
		if st.oddUID {
			delete(t.oddUIDs, st.view.name)
		}
		st.uid, st.oddUID = b, false
		return
	}
	st.uid, st.oddUID = [16]byte{}, true
	t.oddUIDs[st.view.name] = uid
}

// hasUID reports whether uid is st's uid.
func (t *nodeTable) hasUID(st *nodeState, uid types.UID) bool {
	if st.oddUID {
		return t.oddUIDs[st.view.name] == uid
	}
	b, ok := uidbytes.Parse(uid)
	return ok && b == st.uid
}

// uidOf returns st's uid as written ("" before classify has set one).
func (t *nodeTable) uidOf(st *nodeState) types.UID {
	switch {
	case st.oddUID:
		return t.oddUIDs[st.view.name]
	case !st.known:
		return ""
	}
	return uidbytes.Format(&st.uid)
}

// ref is a node object carrying only st's name and uid, for events.
func (t *nodeTable) ref(st *nodeState) *corev1.Node {
	return nodeRef(st.view.name, t.uidOf(st))
}
