package nodelifecycle

import (
	"iter"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// nodeView is what a monitor pass reads of a node, copied out of the node
// object: the pass looks at every node every MonitorPeriod, and holding
// these few fields instead of the object lets the object itself be kept
// compactly (or dropped) by whoever stores it. A node that has to be
// written is read whole at that moment (see assessHealth).
type nodeView struct {
	name string
	uid  types.UID
	// revision is the node's resourceVersion as a number (-1 if it is not
	// one): what the next pass compares with the store's revision of the
	// node, and what a status write is conditioned on.
	revision int64
	created  metav1.Time
	// zone is zoneKey of the node.
	zone string
	// ready is the node's Ready condition when hasReady says it has one.
	// It is held inline: a pointer to a copy was a second heap object per
	// node for the collector to mark on every cycle.
	ready corev1.NodeCondition
	// noSchedule are the controller-owned NoSchedule taint keys the node's
	// conditions and spec.unschedulable call for, in condition order.
	noSchedule []string
	// taints are the node's taints, shared with the object: read-only.
	taints []corev1.Taint
	// listed is the viewCache refresh that last listed the node, which
	// keeps the view cached; the one field a pass writes.
	listed uint64
	// hasReady says ready is set; excluded says the node carries
	// labelExcludeDisruption. The two flags sit together at the end: each
	// after a word-aligned field made the view 272 bytes, a 288-byte
	// allocation per node, where 250 fit the 256-byte size class.
	hasReady bool
	excluded bool
}

// viewOf returns the view of n. It shares n's taints and strings, not n.
func viewOf(n *corev1.Node) *nodeView {
	v := &nodeView{
		name:       n.Name,
		uid:        n.UID,
		revision:   -1,
		created:    n.CreationTimestamp,
		zone:       zoneKey(n),
		taints:     n.Spec.Taints,
		noSchedule: wantedNoSchedule(n),
	}
	if rev, err := strconv.ParseInt(n.ResourceVersion, 10, 64); err == nil {
		v.revision = rev
	}
	_, v.excluded = n.Labels[labelExcludeDisruption]
	if r := readyCondition(&n.Status); r != nil {
		v.ready, v.hasReady = *r, true
	}
	return v
}

// readyCond returns the view's Ready condition, nil if the node has
// none. Views are replaced, never changed, so the pointer stays valid.
func (v *nodeView) readyCond() *corev1.NodeCondition {
	if !v.hasReady {
		return nil
	}
	return &v.ready
}

// ref is a node object carrying only the view's name and uid, for events.
func (v *nodeView) ref() *corev1.Node { return nodeRef(v.name, v.uid) }

// nodeRef is a node object carrying only a name and uid: all an event about
// the node needs.
func nodeRef(name string, uid types.UID) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid}}
}

// wantedNoSchedule returns the controller-owned NoSchedule taint keys n's
// conditions and spec.unschedulable call for, in condition order; nil for a
// healthy schedulable node.
func wantedNoSchedule(n *corev1.Node) []string {
	var wanted []string
	for _, c := range n.Status.Conditions {
		if key, ok := conditionTaints[c.Type][c.Status]; ok && !slices.Contains(wanted, key) {
			wanted = append(wanted, key)
		}
	}
	if n.Spec.Unschedulable && !slices.Contains(wanted, corev1.TaintNodeUnschedulable) {
		wanted = append(wanted, corev1.TaintNodeUnschedulable)
	}
	return wanted
}

// viewCache holds the views a pass was given, by node name, so that the next
// pass rebuilds only the views of nodes whose resourceVersion changed: in a
// steady fleet almost none, where building every view anew cost two
// allocations per node per pass. The zero value is empty and ready.
type viewCache struct {
	views map[string]*nodeView
	pass  uint64
}

// refresh returns the views of the nodes revs yields (name and store
// revision), in its order, and keeps them (and only them) for the next call.
// It reads a node with get only when its revision is not the view's: the
// store may keep unchanged nodes compactly, and decoding every node on every
// pass is what the views exist to avoid. The map is updated in place: a new
// one every pass was 6 MB of garbage per pass at 100,000 nodes.
func (vc *viewCache) refresh(revs iter.Seq2[string, int64], get func(name string) (*corev1.Node, bool), sizeHint int) []*nodeView {
	if vc.views == nil {
		vc.views = make(map[string]*nodeView, sizeHint)
	}
	vc.pass++
	out := make([]*nodeView, 0, sizeHint)
	for name, rev := range revs {
		v := vc.views[name]
		if v == nil || v.revision != rev {
			n, ok := get(name)
			if !ok {
				continue // deleted since it was listed
			}
			v = viewOf(n)
			vc.views[name] = v
		}
		v.listed = vc.pass
		out = append(out, v)
	}
	if len(vc.views) > len(out) {
		for name, v := range vc.views {
			if v.listed != vc.pass {
				delete(vc.views, name)
			}
		}
	}
	return out
}
