package nodelifecycle

import "k8s.io/apimachinery/pkg/types"

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

// stateChunkBits sizes the table's chunks (1,024 states): chunks never
// move, so a *nodeState stays valid while its node is remembered, and
// growing the table copies nothing.
const stateChunkBits = 10

// nodeTable holds the nodeStates by name. Slot 0 is never used. Owned by
// the controller's goroutine, like the rest of its state.
type nodeTable struct {
	index  map[string]int32
	chunks [][]nodeState
	free   []int32
}

func newNodeTable() nodeTable {
	return nodeTable{index: map[string]int32{}, chunks: [][]nodeState{make([]nodeState, 1, 1<<stateChunkBits)}}
}

func (t *nodeTable) at(id int32) *nodeState {
	return &t.chunks[id>>stateChunkBits][id&(1<<stateChunkBits-1)]
}

// get returns the state of name, nil if the table has none.
func (t *nodeTable) get(name string) *nodeState {
	id, ok := t.index[name]
	if !ok {
		return nil
	}
	return t.at(id)
}

// slot returns the slot of name's state, making an empty one if needed.
func (t *nodeTable) slot(name string) int32 {
	if id, ok := t.index[name]; ok {
		return id
	}
	var id int32
	if n := len(t.free); n > 0 {
		id = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		last := len(t.chunks) - 1
		if len(t.chunks[last]) == 1<<stateChunkBits {
			t.chunks = append(t.chunks, make([]nodeState, 0, 1<<stateChunkBits))
			last++
		}
		id = int32(last<<stateChunkBits | len(t.chunks[last]))
		t.chunks[last] = t.chunks[last][:len(t.chunks[last])+1]
	}
	*t.at(id) = nodeState{name: name}
	t.index[name] = id
	return id
}

// remove forgets name's state.
func (t *nodeTable) remove(name string) {
	id, ok := t.index[name]
	if !ok {
		return
	}
	delete(t.index, name)
	*t.at(id) = nodeState{}
	t.free = append(t.free, id)
}

// all calls fn with every state held, in slot order.
func (t *nodeTable) all(fn func(*nodeState)) {
	for _, chunk := range t.chunks {
		for i := range chunk {
			if chunk[i].name != "" {
				fn(&chunk[i])
			}
		}
	}
}
