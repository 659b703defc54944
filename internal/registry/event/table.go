package event

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/registry"
)

// columns are kube-apiserver's event printer columns, in its order: the
// server always fills the wide (priority 1) ones, kubectl hides them unless
// -o wide.
var columns = []metav1.TableColumnDefinition{
	{Name: "Last Seen", Type: "string", Description: corev1.Event{}.SwaggerDoc()["lastTimestamp"]},
	{Name: "Type", Type: "string", Description: corev1.Event{}.SwaggerDoc()["type"]},
	{Name: "Reason", Type: "string", Description: corev1.Event{}.SwaggerDoc()["reason"]},
	{Name: "Object", Type: "string", Description: corev1.Event{}.SwaggerDoc()["involvedObject"]},
	{Name: "Subobject", Type: "string", Priority: 1, Description: corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]},
	{Name: "Source", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["source"]},
	{Name: "Message", Type: "string", Description: corev1.Event{}.SwaggerDoc()["message"]},
	{Name: "First Seen", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["firstTimestamp"]},
	{Name: "Count", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["count"]},
	{Name: "Name", Type: "string", Priority: 1, Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
}

func row(e *corev1.Event, now time.Time) []interface{} {
	first := registry.Age(e.FirstTimestamp, now)
	if e.FirstTimestamp.IsZero() {
		first = microAge(e.EventTime, now)
	}
	last := registry.Age(e.LastTimestamp, now)
	if e.LastTimestamp.IsZero() {
		last = first
	}
	count := e.Count
	switch {
	case e.Series != nil:
		last = microAge(e.Series.LastObservedTime, now)
		count = e.Series.Count
	case count == 0:
		// Events written through events.k8s.io carry no count: they happened once.
		count = 1
	}
	return []interface{}{
		last,
		e.Type,
		e.Reason,
		object(e.InvolvedObject),
		e.InvolvedObject.FieldPath,
		source(e),
		strings.TrimSpace(e.Message),
		first,
		int64(count),
		e.Name,
	}
}

// object is the OBJECT cell: kind/name in lower-case kind, as kubectl.
func object(ref corev1.ObjectReference) string {
	if ref.Name == "" {
		return strings.ToLower(ref.Kind)
	}
	return fmt.Sprintf("%s/%s", strings.ToLower(ref.Kind), ref.Name)
}

// source is the SOURCE cell: component and host, each falling back to the
// events.k8s.io reporting fields.
func source(e *corev1.Event) string {
	component := e.Source.Component
	if component == "" {
		component = e.ReportingController
	}
	host := e.Source.Host
	if host == "" {
		host = e.ReportingInstance
	}
	if host == "" {
		return component
	}
	return component + ", " + host
}

func microAge(t metav1.MicroTime, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return registry.Age(metav1.NewTime(t.Time), now)
}
