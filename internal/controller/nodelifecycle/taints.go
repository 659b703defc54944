package nodelifecycle

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The NoExecute taints this controller owns (reference §3.3): mutually
// exclusive, unreachable for Ready=Unknown, not-ready for Ready=False.
var (
	unreachableNoExecute = corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}
	notReadyNoExecute    = corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}
)

// conditionTaints maps a condition and status to the NoSchedule taint key it
// implies (the table of reference §3.3).
var conditionTaints = map[corev1.NodeConditionType]map[corev1.ConditionStatus]string{
	corev1.NodeReady: {
		corev1.ConditionFalse:   corev1.TaintNodeNotReady,
		corev1.ConditionUnknown: corev1.TaintNodeUnreachable,
	},
	corev1.NodeMemoryPressure:     {corev1.ConditionTrue: corev1.TaintNodeMemoryPressure},
	corev1.NodeDiskPressure:       {corev1.ConditionTrue: corev1.TaintNodeDiskPressure},
	corev1.NodePIDPressure:        {corev1.ConditionTrue: corev1.TaintNodePIDPressure},
	corev1.NodeNetworkUnavailable: {corev1.ConditionTrue: corev1.TaintNodeNetworkUnavailable},
}

// noScheduleKeys are the NoSchedule taint keys the controller owns (the
// keys of conditionTaints and spec.unschedulable's); other NoSchedule
// taints (users', other controllers') are left alone. A key's code in a
// keySeq is its index plus one.
var noScheduleKeys = [...]string{
	corev1.TaintNodeUnschedulable,
	corev1.TaintNodeNotReady,
	corev1.TaintNodeUnreachable,
	corev1.TaintNodeMemoryPressure,
	corev1.TaintNodeDiskPressure,
	corev1.TaintNodePIDPressure,
	corev1.TaintNodeNetworkUnavailable,
}

// noScheduleCode is key's code in a keySeq, 0 if the controller does not
// own it.
func noScheduleCode(key string) uint8 {
	for i, k := range noScheduleKeys {
		if k == key {
			return uint8(i + 1)
		}
	}
	return 0
}

// keySeq is a sequence of distinct controller-owned NoSchedule taint keys,
// by their codes, three bits each from the low end (a zero code ends it):
// seven codes fit, all there are. A view holds two of them and the
// NoExecute bits (12 bytes) where it held a []string and the node's
// []corev1.Taint (48 bytes, the taints' backing array kept alive with
// them, and one more heap object for each node with a pressure condition).
type keySeq uint32

// with returns s with code appended, unless code is 0 or in s already.
func (s keySeq) with(code uint8) keySeq {
	if code == 0 || s.has(code) {
		return s
	}
	shift := 0
	for s>>shift&7 != 0 {
		shift += 3
	}
	return s | keySeq(code)<<shift
}

// has reports whether code is in s.
func (s keySeq) has(code uint8) bool {
	for ; s != 0; s >>= 3 {
		if uint8(s&7) == code {
			return true
		}
	}
	return false
}

// taintSet is what the controller reads of a node's taints: the ones it
// owns. A node has each taint (key and effect) at most once (validation
// rejects repeats), so a set in the node's order is all of them.
type taintSet struct {
	// noSchedule are the controller-owned NoSchedule taints, in the node's
	// order.
	noSchedule keySeq
	// noExecute has bit 1 for unreachableNoExecute, bit 2 for
	// notReadyNoExecute.
	noExecute uint8
}

// noExecuteBit is t's bit in taintSet.noExecute, 0 for any other taint.
func noExecuteBit(t corev1.Taint) uint8 {
	switch {
	case t.MatchTaint(&unreachableNoExecute):
		return 1
	case t.MatchTaint(&notReadyNoExecute):
		return 2
	}
	return 0
}

func taintSetOf(taints []corev1.Taint) taintSet {
	var s taintSet
	for _, t := range taints {
		if t.Effect == corev1.TaintEffectNoSchedule {
			s.noSchedule = s.noSchedule.with(noScheduleCode(t.Key))
			continue
		}
		s.noExecute |= noExecuteBit(t)
	}
	return s
}

// has reports whether the node has t (by key and effect), one of the
// taints the controller owns: for any other it is false.
func (s taintSet) has(t corev1.Taint) bool {
	// A pass asks this of every node, which mostly has none of them: the
	// empty checks come first.
	if t.Effect == corev1.TaintEffectNoSchedule {
		if s.noSchedule == 0 {
			return false
		}
		code := noScheduleCode(t.Key)
		return code != 0 && s.noSchedule.has(code)
	}
	if s.noExecute == 0 {
		return false
	}
	bit := noExecuteBit(t)
	return bit != 0 && s.noExecute&bit != 0
}

// wantedNoSchedule returns the controller-owned NoSchedule taint keys n's
// conditions and spec.unschedulable call for, in condition order; empty
// for a healthy schedulable node.
func wantedNoSchedule(n *corev1.Node) keySeq {
	var wanted keySeq
	for _, c := range n.Status.Conditions {
		if key, ok := conditionTaints[c.Type][c.Status]; ok {
			wanted = wanted.with(noScheduleCode(key))
		}
	}
	if n.Spec.Unschedulable {
		wanted = wanted.with(noScheduleCode(corev1.TaintNodeUnschedulable))
	}
	return wanted
}

// noScheduleDiff returns the NoSchedule taints node v should gain and lose
// so that its controller-owned NoSchedule taints match its conditions and
// spec.unschedulable: those to lose in the node's order, those to gain in
// condition order.
func noScheduleDiff(v *nodeView) (add, remove []corev1.Taint) {
	for s := v.taints.noSchedule; s != 0; s >>= 3 {
		if code := uint8(s & 7); !v.noSchedule.has(code) {
			remove = append(remove, corev1.Taint{Key: noScheduleKeys[code-1], Effect: corev1.TaintEffectNoSchedule})
		}
	}
	for s := v.noSchedule; s != 0; s >>= 3 {
		if code := uint8(s & 7); !v.taints.noSchedule.has(code) {
			add = append(add, corev1.Taint{Key: noScheduleKeys[code-1], Effect: corev1.TaintEffectNoSchedule})
		}
	}
	return add, remove
}

// swappedTaints applies add (replacing a taint of the same key and effect
// unless it is equal apart from timeAdded) and then remove (by key and
// effect) to taints, returning the result and whether it differs.
func swappedTaints(taints, add, remove []corev1.Taint) ([]corev1.Taint, bool) {
	out := append([]corev1.Taint(nil), taints...)
	changed := false
	for _, t := range add {
		found := false
		for i := range out {
			if out[i].MatchTaint(&t) {
				found = true
				if out[i].Value != t.Value {
					out[i] = t
					changed = true
				}
				break
			}
		}
		if !found {
			out = append(out, t)
			changed = true
		}
	}
	for _, t := range remove {
		kept := out[:0]
		for _, have := range out {
			if have.MatchTaint(&t) {
				changed = true
				continue
			}
			kept = append(kept, have)
		}
		out = kept
	}
	return out, changed
}

// stamped returns copies of taints with timeAdded set to now, as
// kube-controller-manager stamps every taint it adds.
func stamped(taints []corev1.Taint, now metav1.Time) []corev1.Taint {
	out := make([]corev1.Taint, len(taints))
	for i, t := range taints {
		t.TimeAdded = &now
		out[i] = t
	}
	return out
}
