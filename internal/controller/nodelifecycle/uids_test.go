package nodelifecycle

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	uuidutil "k8s.io/apimachinery/pkg/util/uuid"
)

// The table answers for a node's uid exactly as written, UUID or not, and
// a uid that changes form (a node replaced by one whose uid is another
// kind) leaves nothing of the old one behind.
func TestNodeTableUIDs(t *testing.T) {
	tab := newNodeTable()
	const a, b = types.UID("0123abcd-4567-89ef-0a1b-2c3d4e5f6789"), types.UID("uid-n1-7")
	st := tab.at(tab.slot("n1"))
	if got := tab.uidOf(st); got != "" {
		t.Errorf("uid of a node never classified = %q", got)
	}
	st.known = true
	for _, step := range []types.UID{a, b, a, b} {
		tab.setUID(st, step)
		if got := tab.uidOf(st); got != step {
			t.Errorf("uidOf after setUID(%s) = %s", step, got)
		}
		for _, other := range []types.UID{a, b, "", "0123abcd-4567-89ef-0a1b-2c3d4e5f6780", "uid-n1-8"} {
			if got := tab.hasUID(st, other); got != (other == step) {
				t.Errorf("uid %s: hasUID(%s) = %v", step, other, got)
			}
		}
		wantOdd := 0
		if step == b {
			wantOdd = 1
		}
		if len(tab.oddUIDs) != wantOdd {
			t.Errorf("uid %s: %d odd uids held, want %d", step, len(tab.oddUIDs), wantOdd)
		}
	}
	tab.remove("n1")
	if len(tab.oddUIDs) != 0 || tab.get("n1") != nil {
		t.Errorf("removed node left %v", tab.oddUIDs)
	}
}

// Events name a node by its uid as written, UUID or not, and a node
// registered again under its name with a new uid is a new node.
func TestEventsCarryUIDs(t *testing.T) {
	ctx := context.Background()
	m := newMemCluster(t, t0)
	first, second := uuidutil.NewUUID(), uuidutil.NewUUID()
	m.addNode("n1", "", corev1.ConditionTrue)
	m.objs["n1"].UID = first
	m.addNode("n2", "", corev1.ConditionTrue) // uid "uid-n2-…": not a UUID
	odd := m.objs["n2"].UID
	c := m.controller(Config{})
	c.monitor(ctx)
	replaced := m.get("n1").DeepCopy()
	replaced.UID, replaced.ResourceVersion = second, m.nextRV()
	m.objs["n1"] = replaced
	delete(m.objs, "n2")
	c.monitor(ctx)
	want := []recorded{
		{node: "n1", uid: first, reason: "RegisteredNode"},
		{node: "n2", uid: odd, reason: "RegisteredNode"},
		{node: "n1", uid: first, reason: "RemovingNode"},
		{node: "n1", uid: second, reason: "RegisteredNode"},
		{node: "n2", uid: odd, reason: "RemovingNode"},
	}
	var got []recorded
	for _, e := range m.events {
		e.message = ""
		got = append(got, e)
	}
	// The first pass lists n1 and n2 in map order.
	if len(got) == len(want) && got[0].node == "n2" {
		got[0], got[1] = got[1], got[0]
	}
	if len(got) != len(want) {
		t.Fatalf("events %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("event %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if len(c.nodes.oddUIDs) != 0 {
		t.Errorf("odd uids %v held after their node left", c.nodes.oddUIDs)
	}
}
