package nodelifecycle

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// An instant is the time it was made from, to the nanosecond, on either
// side of the Unix epoch and of the zero time.
func TestInstantRoundTrip(t *testing.T) {
	times := []time.Time{
		{},
		time.Unix(0, 0),
		time.Unix(-1, 999_999_999),
		time.Unix(0, 1),
		time.Time{}.Add(time.Nanosecond),
		time.Time{}.Add(-time.Second),
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		t0.Add(1234567 * time.Nanosecond),
		time.Now(), // a monotonic reading, local time zone
		time.Now().In(time.FixedZone("east", 5*3600)),
	}
	for _, tm := range times {
		in := metav1.NewTime(tm)
		out := instantOf(in).time()
		if !equality.Semantic.DeepEqual(in, out) || !out.Equal(&in) || out.IsZero() != in.IsZero() || stampOf(out.Time) != stampOf(in.Time) {
			t.Errorf("%v came back as %v", in, out)
		}
	}
	if got := instantOf(metav1.Time{}).time(); got != (metav1.Time{}) {
		t.Errorf("the zero time came back as %#v", got)
	}
}

// A view answers every question a pass asks exactly as the node object
// would: its revision, zone and exclusion, its Ready condition (or
// creation time), the controller-owned taints it has, and the NoSchedule taints it should gain and lose, checked
// against the slice-based reading the view replaced, over random nodes.
func TestViewAnswersAsTheNode(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	statuses := []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown, "Odd"}
	condTypes := []corev1.NodeConditionType{
		corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure,
		corev1.NodePIDPressure, corev1.NodeNetworkUnavailable, "Custom",
	}
	var keys []string
	keys = append(keys, noScheduleKeys[:]...)
	keys = append(keys, "example.com/dedicated")
	effects := []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute, corev1.TaintEffectPreferNoSchedule}
	var probes []corev1.Taint
	for _, k := range keys {
		for _, e := range effects {
			probes = append(probes, corev1.Taint{Key: k, Effect: e})
		}
	}
	someTime := func() metav1.Time {
		if rng.IntN(5) == 0 {
			return metav1.Time{}
		}
		return metav1.NewTime(t0.Add(time.Duration(rng.Int64N(int64(48 * time.Hour)))))
	}
	for i := range 2000 {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", CreationTimestamp: someTime(), ResourceVersion: "42"}}
		n.Spec.Unschedulable = rng.IntN(3) == 0
		for _, l := range []string{corev1.LabelTopologyRegion, corev1.LabelTopologyZone, corev1.LabelFailureDomainBetaRegion, corev1.LabelFailureDomainBetaZone, labelExcludeDisruption} {
			if rng.IntN(2) == 0 {
				if n.Labels == nil {
					n.Labels = map[string]string{}
				}
				n.Labels[l] = fmt.Sprint("v", rng.IntN(3))
			}
		}
		for _, ti := range rng.Perm(len(condTypes))[:rng.IntN(len(condTypes)+1)] {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{
				Type: condTypes[ti], Status: statuses[rng.IntN(len(statuses))],
				LastHeartbeatTime: someTime(), LastTransitionTime: someTime(),
				Reason: "Reason", Message: "message",
			})
		}
		// Unique by key and effect, as validation keeps a node's taints.
		for _, pi := range rng.Perm(len(probes))[:rng.IntN(6)] {
			n.Spec.Taints = append(n.Spec.Taints, probes[pi])
		}
		v := viewOf(n)
		_, excluded := n.Labels[labelExcludeDisruption]
		if v.name != n.Name || v.revision != 42 || v.zone() != zoneKey(n) || v.excluded != excluded {
			t.Fatalf("node %d: view %q at %d in zone %q, excluded %v", i, v.name, v.revision, v.zone(), v.excluded)
		}
		if r := readyCondition(&n.Status); (r != nil) != v.hasReady {
			t.Fatalf("node %d: hasReady %v", i, v.hasReady)
		} else if r != nil {
			if got := v.readyCondition(); !equality.Semantic.DeepEqual(got, *r) {
				t.Fatalf("node %d: Ready condition %+v, want %+v", i, got, *r)
			}
		} else if got := v.created(); !got.Equal(&n.CreationTimestamp) {
			t.Fatalf("node %d: created %v, want %v", i, got, n.CreationTimestamp)
		}
		for _, p := range probes {
			owned := p.MatchTaint(&unreachableNoExecute) || p.MatchTaint(&notReadyNoExecute) ||
				p.Effect == corev1.TaintEffectNoSchedule && noScheduleCode(p.Key) != 0
			if want := owned && hasTaintIn(n.Spec.Taints, p); v.taints.has(p) != want {
				t.Fatalf("node %d, taints %v: has(%v) = %v", i, n.Spec.Taints, p, !want)
			}
		}
		add, remove := noScheduleDiff(v)
		wantAdd, wantRemove := sliceNoScheduleDiff(n)
		if !slices.Equal(add, wantAdd) || !slices.Equal(remove, wantRemove) {
			t.Fatalf("node %d: diff +%v -%v, want +%v -%v", i, add, remove, wantAdd, wantRemove)
		}
	}
}

// sliceNoScheduleDiff is noScheduleDiff as it was computed from the node's
// own slices before views held them as keySeqs.
func sliceNoScheduleDiff(n *corev1.Node) (add, remove []corev1.Taint) {
	var wanted []string
	for _, c := range n.Status.Conditions {
		if key, ok := conditionTaints[c.Type][c.Status]; ok && !slices.Contains(wanted, key) {
			wanted = append(wanted, key)
		}
	}
	if n.Spec.Unschedulable && !slices.Contains(wanted, corev1.TaintNodeUnschedulable) {
		wanted = append(wanted, corev1.TaintNodeUnschedulable)
	}
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule && noScheduleCode(t.Key) != 0 && !slices.Contains(wanted, t.Key) {
			remove = append(remove, corev1.Taint{Key: t.Key, Effect: corev1.TaintEffectNoSchedule})
		}
	}
	for _, key := range wanted {
		if t := (corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule}); !hasTaintIn(n.Spec.Taints, t) {
			add = append(add, t)
		}
	}
	return add, remove
}

func hasTaintIn(taints []corev1.Taint, t corev1.Taint) bool {
	return slices.ContainsFunc(taints, func(have corev1.Taint) bool { return have.MatchTaint(&t) })
}

// Every key a condition taints with is one the controller owns, and has a
// code: the keySeqs hold them all.
func TestNoScheduleKeysCoverConditionTaints(t *testing.T) {
	for typ, byStatus := range conditionTaints {
		for status, key := range byStatus {
			if noScheduleCode(key) == 0 {
				t.Errorf("%s=%s taints with %s, which has no code", typ, status, key)
			}
		}
	}
	if len(noScheduleKeys) > 7 {
		t.Errorf("%d keys: a keySeq code has three bits", len(noScheduleKeys))
	}
}
