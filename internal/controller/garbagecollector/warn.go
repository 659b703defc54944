package garbagecollector

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/registry"
)

// ReasonInvalidNamespace is the Warning event reason for an owner reference
// that breaks the namespace rules (Kubernetes' OwnerRefInvalidNamespace).
const ReasonInvalidNamespace = "OwnerRefInvalidNamespace"

// eventSource is the component Kubernetes' garbage collector reports as.
const eventSource = "garbage-collector-controller"

// checkCrossNamespace reports a namespaced dependent whose owner reference
// names (by uid) an object that lives in another namespace: owners are only
// looked up in the dependent's namespace, so the reference is dangling.
func (gc *GarbageCollector) checkCrossNamespace(ctx context.Context, res *registry.Resource, dep metav1.Object, ref metav1.OwnerReference) {
	key, ok := gc.graph.keyOfUID(ref.UID)
	if !ok {
		return
	}
	ownerRes, ok := gc.res.forKey(key)
	if !ok || !ownerRes.Namespaced {
		return
	}
	if ns, _, err := ownerRes.NamespaceAndNameFromKey(key); err == nil && ns != dep.GetNamespace() {
		gc.warnInvalidNamespace(ctx, res, dep, ref)
	}
}

// warnInvalidNamespace records a Warning event about dep (once per
// dependent), or logs it when the server does not serve core/v1 events.
func (gc *GarbageCollector) warnInvalidNamespace(ctx context.Context, res *registry.Resource, dep metav1.Object, ref metav1.OwnerReference) {
	gc.warnedMu.Lock()
	seen := gc.warned[dep.GetUID()]
	gc.warned[dep.GetUID()] = true
	gc.warnedMu.Unlock()
	if seen {
		return
	}
	// Kubernetes' wording, naming the reference as looked up in dep's namespace.
	msg := fmt.Sprintf("ownerRef [%s/%s, namespace: %s, name: %s, uid: %s] does not exist in namespace %q",
		ref.APIVersion, ref.Kind, dep.GetNamespace(), ref.Name, ref.UID, dep.GetNamespace())
	attrs := []any{"resource", res.GroupResource().String(), "namespace", dep.GetNamespace(), "name", dep.GetName(), "reason", ReasonInvalidNamespace, "message", msg}
	if _, ok := gc.res.byKind[corev1.SchemeGroupVersion.WithKind("Event").GroupKind()]; !ok {
		gc.log.Warn("invalid owner reference", attrs...)
		return
	}
	ns := dep.GetNamespace()
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	now := metav1.NewTime(gc.now())
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", dep.GetName(), now.UnixNano()), Namespace: ns},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: res.GroupVersion.String(), Kind: res.Kind,
			Namespace: dep.GetNamespace(), Name: dep.GetName(), UID: dep.GetUID(), ResourceVersion: dep.GetResourceVersion(),
		},
		Reason:         ReasonInvalidNamespace,
		Message:        msg,
		Type:           corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: eventSource},
		FirstTimestamp: now,
		LastTimestamp:  now,
		Count:          1,
	}
	if _, err := gc.client.CoreV1().Events(ns).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		gc.log.Warn("invalid owner reference (event not recorded)", append(attrs, "err", err)...)
		return
	}
	gc.log.Warn("invalid owner reference", attrs...)
}
