package nodelifecycle

import (
	"iter"
	"slices"

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
	name            string
	uid             types.UID
	resourceVersion string
	created         metav1.Time
	// zone is zoneKey of the node; excluded says it carries
	// labelExcludeDisruption.
	zone     string
	excluded bool
	// ready is the node's Ready condition (nil if it has none).
	ready *corev1.NodeCondition
	// noSchedule are the controller-owned NoSchedule taint keys the node's
	// conditions and spec.unschedulable call for, in condition order.
	noSchedule []string
	// taints are the node's taints, shared with the object: read-only.
	taints []corev1.Taint
}

// viewOf returns the view of n. It shares n's taints and strings, not n.
func viewOf(n *corev1.Node) *nodeView {
	v := &nodeView{
		name:            n.Name,
		uid:             n.UID,
		resourceVersion: n.ResourceVersion,
		created:         n.CreationTimestamp,
		zone:            zoneKey(n),
		taints:          n.Spec.Taints,
		noSchedule:      wantedNoSchedule(n),
	}
	_, v.excluded = n.Labels[labelExcludeDisruption]
	if r := readyCondition(&n.Status); r != nil {
		ready := *r
		v.ready = &ready
	}
	return v
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
// allocations per node per pass.
type viewCache map[string]*nodeView

// refresh returns the views of nodes, in their order, and keeps them (and
// only them) for the next call.
func (vc *viewCache) refresh(nodes iter.Seq[*corev1.Node], sizeHint int) []*nodeView {
	out := make([]*nodeView, 0, sizeHint)
	next := make(viewCache, sizeHint)
	for n := range nodes {
		v := (*vc)[n.Name]
		if v == nil || v.resourceVersion != n.ResourceVersion {
			v = viewOf(n)
		}
		next[n.Name] = v
		out = append(out, v)
	}
	*vc = next
	return out
}
