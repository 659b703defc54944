package namespaces

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The deletion conditions kube-controller-manager maintains on a
// terminating namespace, with its reasons and messages when all is well.
var conditionTypes = []corev1.NamespaceConditionType{
	corev1.NamespaceDeletionDiscoveryFailure,
	corev1.NamespaceDeletionGVParsingFailure,
	corev1.NamespaceDeletionContentFailure,
	corev1.NamespaceContentRemaining,
	corev1.NamespaceFinalizersRemaining,
}

var okConditions = map[corev1.NamespaceConditionType]struct{ reason, message string }{
	corev1.NamespaceDeletionDiscoveryFailure: {"ResourcesDiscovered", "All resources successfully discovered"},
	corev1.NamespaceDeletionGVParsingFailure: {"ParsedGroupVersions", "All legacy kube types successfully parsed"},
	corev1.NamespaceDeletionContentFailure:   {"ContentDeleted", "All content successfully deleted, may be waiting on finalization"},
	corev1.NamespaceContentRemaining:         {"ContentRemoved", "All content successfully removed"},
	corev1.NamespaceFinalizersRemaining:      {"ContentRemoved", "All content successfully removed"},
}

// conditionsFor are the conditions o calls for: failures first, the ok
// form for every type without one. (Discovery and group-version parsing
// cannot fail here: the resources are the server's own.)
func conditionsFor(o *outcome, now metav1.Time) []corev1.NamespaceCondition {
	failing := map[corev1.NamespaceConditionType]corev1.NamespaceCondition{}
	if len(o.failures) > 0 {
		msgs := make([]string, len(o.failures))
		for i, err := range o.failures {
			msgs[i] = err.Error()
		}
		sort.Strings(msgs)
		failing[corev1.NamespaceDeletionContentFailure] = corev1.NamespaceCondition{
			Reason:  "ContentDeletionFailed",
			Message: fmt.Sprintf("Failed to delete all resource types, %d remaining: %v", len(msgs), strings.Join(msgs, ", ")),
		}
	}
	if len(o.remaining) > 0 {
		failing[corev1.NamespaceContentRemaining] = corev1.NamespaceCondition{
			Reason:  "SomeResourcesRemain",
			Message: "Some resources are remaining: " + o.remainingSummary(),
		}
	}
	if len(o.finalizers) > 0 {
		parts := make([]string, 0, len(o.finalizers))
		for f, n := range o.finalizers {
			parts = append(parts, fmt.Sprintf("%s in %d resource instances", f, n))
		}
		sort.Strings(parts)
		failing[corev1.NamespaceFinalizersRemaining] = corev1.NamespaceCondition{
			Reason:  "SomeFinalizerRemain",
			Message: "Some finalizers are remaining: " + strings.Join(parts, ", "),
		}
	}
	out := make([]corev1.NamespaceCondition, 0, len(conditionTypes))
	for _, t := range conditionTypes {
		c, bad := failing[t]
		if bad {
			c.Status = corev1.ConditionTrue
		} else {
			ok := okConditions[t]
			c = corev1.NamespaceCondition{Status: corev1.ConditionFalse, Reason: ok.reason, Message: ok.message}
		}
		c.Type, c.LastTransitionTime = t, now
		out = append(out, c)
	}
	return out
}

// mergeConditions sets want on status as upstream's updateConditions does:
// a condition's transition time moves only when its status does. It
// reports whether anything changed.
func mergeConditions(status *corev1.NamespaceStatus, want []corev1.NamespaceCondition) bool {
	changed := false
	for _, w := range want {
		i := indexOf(status.Conditions, w.Type)
		if i < 0 {
			status.Conditions = append(status.Conditions, w)
			changed = true
			continue
		}
		old := &status.Conditions[i]
		if old.Status == w.Status && old.Reason == w.Reason && old.Message == w.Message {
			continue
		}
		if old.Status != w.Status {
			old.LastTransitionTime = w.LastTransitionTime
		}
		old.Status, old.Reason, old.Message = w.Status, w.Reason, w.Message
		changed = true
	}
	return changed
}

func indexOf(conds []corev1.NamespaceCondition, t corev1.NamespaceConditionType) int {
	for i := range conds {
		if conds[i].Type == t {
			return i
		}
	}
	return -1
}

// writeConditions records o in the namespace's status, if that changes it.
// A namespace gone meanwhile is not an error.
func (c *Controller) writeConditions(ctx context.Context, ns *corev1.Namespace, o *outcome) error {
	ns = ns.DeepCopy()
	if !mergeConditions(&ns.Status, conditionsFor(o, metav1.NewTime(c.now()))) {
		return nil
	}
	_, err := c.client.CoreV1().Namespaces().UpdateStatus(ctx, ns, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("updating the conditions of namespace %s: %w", ns.Name, err)
	}
	return nil
}
