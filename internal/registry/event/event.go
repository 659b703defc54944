// Package event describes core v1 Events: namespaced, short name ev, the
// field selectors kubectl describe and event recorders send (involvedObject.*,
// reason, reportingComponent, source, type), kube-apiserver's legacy v1
// validation, and the columns `kubectl get events` prints.
//
// events.k8s.io/v1 is not served: it shares /registry/events/ with core v1
// and would need conversion between the two schemas on every read and write,
// which the generic request path does not do.
//
// Invariants: the descriptor's functions are pure and only ever see
// *corev1.Event values.
package event

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/leasehold/leasehold/internal/registry"
)

// Resource returns the descriptor of core v1 events; now is the clock of the
// LAST SEEN and FIRST SEEN columns.
func Resource(now func() time.Time) *registry.Resource {
	return &registry.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Resource:     "events",
		SingularName: "event",
		Kind:         "Event",
		ListKind:     "EventList",
		ShortNames:   []string{"ev"},
		Namespaced:   true,
		// As kube-apiserver's event strategy: a PUT may create.
		AllowCreateOnUpdate:      true,
		AllowUnconditionalUpdate: true,
		New:                      func() runtime.Object { return &corev1.Event{} },
		NewList:                  func() runtime.Object { return &corev1.EventList{} },
		ValidateCreate: func(obj runtime.Object) field.ErrorList {
			return Validate(obj.(*corev1.Event))
		},
		ValidateUpdate: func(obj, _ runtime.Object) field.ErrorList {
			return Validate(obj.(*corev1.Event))
		},
		SelectableFields: func(obj runtime.Object) fields.Set { return SelectableFields(obj.(*corev1.Event)) },
		TableColumns:     columns,
		TableRow:         func(obj runtime.Object) []interface{} { return row(obj.(*corev1.Event), now()) },
	}
}

// SelectableFields are the fields kube-apiserver's event GetAttrs exposes to
// field selectors (metadata.name and metadata.namespace are added by the
// caller). source falls back to reportingController, as upstream, so
// selecting on source finds events written through events.k8s.io clients.
func SelectableFields(e *corev1.Event) fields.Set {
	source := e.Source.Component
	if source == "" {
		source = e.ReportingController
	}
	return fields.Set{
		"involvedObject.kind":            e.InvolvedObject.Kind,
		"involvedObject.namespace":       e.InvolvedObject.Namespace,
		"involvedObject.name":            e.InvolvedObject.Name,
		"involvedObject.uid":             string(e.InvolvedObject.UID),
		"involvedObject.apiVersion":      e.InvolvedObject.APIVersion,
		"involvedObject.resourceVersion": e.InvolvedObject.ResourceVersion,
		"involvedObject.fieldPath":       e.InvolvedObject.FieldPath,
		"reason":                         e.Reason,
		"reportingComponent":             e.ReportingController,
		"source":                         source,
		"type":                           e.Type,
	}
}
