package nodelifecycle

import (
	"slices"

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

// managedNoScheduleKeys are the NoSchedule taint keys the controller owns;
// other NoSchedule taints (users', other controllers') are left alone.
var managedNoScheduleKeys = func() map[string]bool {
	m := map[string]bool{corev1.TaintNodeUnschedulable: true}
	for _, byStatus := range conditionTaints {
		for _, key := range byStatus {
			m[key] = true
		}
	}
	return m
}()

// noScheduleDiff returns the NoSchedule taints node v should gain and lose
// so that its controller-owned NoSchedule taints match its conditions and
// spec.unschedulable.
func noScheduleDiff(v *nodeView) (add, remove []corev1.Taint) {
	for _, t := range v.taints {
		if t.Effect == corev1.TaintEffectNoSchedule && managedNoScheduleKeys[t.Key] && !slices.Contains(v.noSchedule, t.Key) {
			remove = append(remove, corev1.Taint{Key: t.Key, Effect: corev1.TaintEffectNoSchedule})
		}
	}
	for _, key := range v.noSchedule {
		if t := (corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule}); !hasTaint(v.taints, t) {
			add = append(add, t)
		}
	}
	return add, remove
}

// hasTaint reports whether taints hold one with t's key and effect.
func hasTaint(taints []corev1.Taint, t corev1.Taint) bool {
	for i := range taints {
		if taints[i].MatchTaint(&t) {
			return true
		}
	}
	return false
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
