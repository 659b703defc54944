package agent

import (
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// nodeStatusChanged says whether new differs from old in anything but the
// conditions' lastHeartbeatTime. A heartbeat alone is not a change: that is
// what makes the status write rare (KEP-589), the lease carries liveness.
func nodeStatusChanged(old, new *corev1.NodeStatus) bool {
	if len(old.Conditions) != len(new.Conditions) {
		return true
	}
	for i := range new.Conditions {
		o := findCondition(old.Conditions, new.Conditions[i].Type)
		if o == nil {
			return true
		}
		a, b := *o, new.Conditions[i]
		a.LastHeartbeatTime, b.LastHeartbeatTime = metav1.Time{}, metav1.Time{}
		if !apiequality.Semantic.DeepEqual(a, b) {
			return true
		}
	}
	oldRest, newRest := *old, *new
	oldRest.Conditions, newRest.Conditions = nil, nil
	return !apiequality.Semantic.DeepEqual(oldRest, newRest)
}

// reportDue says whether a status must be written although nothing changed:
// never reported since the agent started (a restart refreshes the heartbeat
// at once), or the report period (plus the spreading delay) has passed.
func reportDue(lastReport, now time.Time, reportFrequency, delay time.Duration) bool {
	if lastReport.IsZero() {
		return true
	}
	return now.Sub(lastReport) >= reportFrequency+delay
}

// shouldPatchStatus is the whole write decision: on change, when a report
// is due, and on every retry (a retry means the previous try failed, so the
// server may hold nothing recent).
func shouldPatchStatus(changed bool, attempt int, lastReport, now time.Time, reportFrequency, delay time.Duration) bool {
	return changed || attempt > 0 || reportDue(lastReport, now, reportFrequency, delay)
}

// spreadDelay is the kubelet's one-time offset after a real change, uniform
// in [-0.5, 0.5) x reportFrequency from u in [0, 1): nodes that changed
// together (a control plane outage) do not keep reporting together.
func spreadDelay(reportFrequency time.Duration, u float64) time.Duration {
	return time.Duration(float64(reportFrequency) * (u - 0.5))
}

// nodeStatusPatch is the strategic merge patch from old to new for
// nodes/status. The spec is copied from old first so the patch can never touch
// it; metadata is diffed too, which is how registration fixes labels.
func nodeStatusPatch(old, new *corev1.Node) ([]byte, error) {
	oldJSON, err := json.Marshal(old)
	if err != nil {
		return nil, fmt.Errorf("marshal node %q: %w", old.Name, err)
	}
	diff := new.DeepCopy()
	diff.Spec = old.Spec
	newJSON, err := json.Marshal(diff)
	if err != nil {
		return nil, fmt.Errorf("marshal node %q: %w", new.Name, err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, corev1.Node{})
	if err != nil {
		return nil, fmt.Errorf("create strategic merge patch for node %q: %w", new.Name, err)
	}
	return patch, nil
}
