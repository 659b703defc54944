package openapi

import (
	"strings"
	"testing"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/leasehold/leasehold/internal/registry"
)

// unmodelled is a kind with no generated OpenAPI definition.
type unmodelled struct {
	Name string `json:"name"`
}

func (u *unmodelled) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }
func (u *unmodelled) DeepCopyObject() runtime.Object   { c := *u; return &c }

// embedsTypeMeta inherits TypeMeta's OpenAPIModelName through embedding, so
// the builders would silently describe it as TypeMeta.
type embedsTypeMeta struct {
	metav1.TypeMeta `json:",inline"`
}

func (u *embedsTypeMeta) DeepCopyObject() runtime.Object { c := *u; return &c }

func TestNewFailsWithoutGeneratedDefinition(t *testing.T) {
	for _, obj := range []runtime.Object{&unmodelled{}, &embedsTypeMeta{}} {
		set := registry.NewSet(&registry.Resource{
			GroupVersion: schema.GroupVersion{Group: "example.com", Version: "v1"}, Resource: "widgets",
			Kind: "Widget", ListKind: "WidgetList",
			New:     func() runtime.Object { return obj.DeepCopyObject() },
			NewList: func() runtime.Object { return &eventsv1.EventList{} },
		})
		_, err := New(set, "v1.33.0")
		if err == nil || !strings.Contains(err.Error(), "widgets") {
			t.Errorf("New(%T) = %v, want an error naming the resource without a definition", obj, err)
		}
	}
}

// TestKindOutsideScheme serves events.k8s.io/v1, which served.NewScheme
// does not register: the served resource alone must be enough to tag its
// definition with its kind, or apply could not find the type.
func TestKindOutsideScheme(t *testing.T) {
	set := registry.NewSet(&registry.Resource{
		GroupVersion: eventsv1.SchemeGroupVersion, Resource: "events", SingularName: "event",
		Kind: "Event", ListKind: "EventList", Namespaced: true,
		New:     func() runtime.Object { return &eventsv1.Event{} },
		NewList: func() runtime.Object { return &eventsv1.EventList{} },
	})
	o, err := New(set, "v1.33.0")
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ev := &eventsv1.Event{
		TypeMeta:   metav1.TypeMeta{APIVersion: "events.k8s.io/v1", Kind: "Event"},
		ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "default"},
		Reason:     "Test",
	}
	if _, err := o.TypeConverter().ObjectToTyped(ev); err != nil {
		t.Fatalf("ObjectToTyped(events.k8s.io/v1 Event): %v", err)
	}
	if _, ok := o.V3("apis/events.k8s.io/v1"); !ok {
		t.Errorf("no v3 document for events.k8s.io/v1")
	}
	doc, _ := o.V3("apis/events.k8s.io/v1")
	if item := doc.Paths.Paths["/apis/events.k8s.io/v1/namespaces/{namespace}/events/{name}"]; item == nil ||
		item.Patch == nil || item.Patch.OperationId != "patchEventsV1NamespacedEvent" {
		t.Errorf("events.k8s.io/v1 patch operation missing or misnamed")
	}
}
