package garbagecollector

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/leasehold/leasehold/internal/slots"
)

// TestUIDIndexBehavesAsAMap drives the open-addressing uid index and a map
// (its former form) with the same random puts and removes, as the graph
// makes them: an entry's uid is removed before it changes. Entries share
// uids (the last put wins, and removing the loser does nothing), so runs
// of colliding cells form, grow with the table and are emptied again, which
// exercises the moves of free. Every uid is looked up after each step.
func TestUIDIndexBehavesAsAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	entries := slots.New[entry, slotID](func(e *entry) *string { return &e.key })
	x := newUIDIndex(entries)
	var ids []slotID
	for i := range 400 {
		id, _ := entries.Slot(fmt.Sprintf("/k%d", i))
		ids = append(ids, id)
	}
	var uids []types.UID
	for i := range 300 {
		uids = append(uids, types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", rng.Uint32(), i)))
	}
	uids = append(uids, "not-a-uuid", "0D9F3A4E-0000-4000-8000-000000000000")
	model := map[types.UID]slotID{}
	indexed := map[slotID]bool{}
	for step := range 50_000 {
		id := ids[rng.IntN(len(ids))]
		e := entries.At(id)
		if indexed[id] {
			uid := e.uidString("")
			x.remove(e, id)
			if model[uid] == id {
				delete(model, uid)
			}
			indexed[id] = false
		}
		// Fill the table, then empty it most of the way, twice.
		if phase := step / 12_500; phase%2 == 0 || rng.IntN(8) == 0 {
			uid := uids[rng.IntN(len(uids))]
			e.setUID(uid)
			x.put(e, id)
			model[uid] = id
			indexed[id] = true
		}
		for _, uid := range uids {
			got, ok := x.get(uid)
			want, wantOK := model[uid]
			if got != want || ok != wantOK {
				t.Fatalf("step %d: get(%s) = %d %v, want %d %v", step, uid, got, ok, want, wantOK)
			}
		}
		if n := x.len(); n != len(model) {
			t.Fatalf("step %d: index holds %d uids, want %d", step, n, len(model))
		}
	}
}
