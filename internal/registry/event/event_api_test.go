package event_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/internal/server/servertest"
)

func podEvent(name, pod, uid, reason, typ string) *corev1.Event {
	seen := metav1.NewTime(time.Now().Add(-time.Minute))
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", Namespace: "default", Name: pod, UID: k8stypes.UID("uid-" + uid),
			APIVersion: "v1", ResourceVersion: "42", FieldPath: "spec.containers{app}",
		},
		Reason: reason, Message: "message of " + name, Type: typ,
		Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
		FirstTimestamp: seen, LastTimestamp: seen, Count: 3,
	}
}

// names lists the event names a list returned, sorted.
func names(items []corev1.Event) []string {
	var out []string
	for _, e := range items {
		out = append(out, e.Name)
	}
	slices.Sort(out)
	return out
}

// TestEventFieldSelectors sends the selectors kubectl describe and event
// consumers send, over JSON and protobuf (kubectl 1.33 asks for protobuf).
func TestEventFieldSelectors(t *testing.T) {
	srv := servertest.Start(t)
	ctx := context.Background()
	setup := srv.Client.CoreV1().Events("default")
	for _, e := range []*corev1.Event{
		podEvent("a.1", "web-1", "a", "Scheduled", corev1.EventTypeNormal),
		podEvent("a.2", "web-1", "a", "BackOff", corev1.EventTypeWarning),
		podEvent("b.1", "web-2", "b", "Scheduled", corev1.EventTypeNormal),
		{
			// A new-style event (events.k8s.io recorder): no source, a reporting controller.
			ObjectMeta:          metav1.ObjectMeta{Name: "n.1"},
			InvolvedObject:      corev1.ObjectReference{Kind: "Node", Name: "node-1", UID: "uid-n", APIVersion: "v1"},
			Reason:              "RegisteredNode",
			Type:                corev1.EventTypeNormal,
			EventTime:           metav1.NewMicroTime(time.Now()),
			Action:              "Register",
			ReportingController: "node-controller",
			ReportingInstance:   "leasehold-1",
		},
	} {
		if _, err := setup.Create(ctx, e, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", e.Name, err)
		}
	}
	cases := []struct {
		selector string
		want     []string
	}{
		// What kubectl describe pod web-1 sends.
		{"involvedObject.name=web-1,involvedObject.namespace=default,involvedObject.kind=Pod,involvedObject.uid=uid-a", []string{"a.1", "a.2"}},
		{"involvedObject.kind=Node", []string{"n.1"}},
		{"involvedObject.namespace=", []string{"n.1"}},
		{"involvedObject.apiVersion=v1,involvedObject.resourceVersion=42", []string{"a.1", "a.2", "b.1"}},
		{"involvedObject.fieldPath=spec.containers{app},involvedObject.name!=web-1", []string{"b.1"}},
		{"reason=Scheduled", []string{"a.1", "b.1"}},
		{"type=Warning", []string{"a.2"}},
		{"type!=Normal", []string{"a.2"}},
		{"source=kubelet", []string{"a.1", "a.2", "b.1"}},
		// source falls back to the reporting controller, as upstream.
		{"source=node-controller", []string{"n.1"}},
		{"reportingComponent=node-controller", []string{"n.1"}},
		{"metadata.name=b.1,metadata.namespace=default", []string{"b.1"}},
	}
	for _, tc := range []struct {
		name   string
		client kubernetes.Interface
	}{
		{"json", srv.Client},
		{"protobuf", kubernetes.NewForConfigOrDie(srv.ProtobufConfig())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			events := tc.client.CoreV1().Events("default")
			for _, c := range cases {
				list, err := events.List(ctx, metav1.ListOptions{FieldSelector: c.selector})
				if err != nil {
					t.Errorf("%s: %v", c.selector, err)
					continue
				}
				if got := names(list.Items); !slices.Equal(got, c.want) {
					t.Errorf("%s selected %v, want %v", c.selector, got, c.want)
				}
			}
			// Across namespaces too (kubectl get events -A --field-selector).
			all, err := tc.client.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "reason=BackOff"})
			if err != nil || !slices.Equal(names(all.Items), []string{"a.2"}) {
				t.Errorf("all namespaces: %v %v", err, names(all.Items))
			}
			_, err = events.List(ctx, metav1.ListOptions{FieldSelector: "message=x"})
			if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "field label not supported: message") {
				t.Errorf("unknown field: want 400 field label not supported, got %v", err)
			}
		})
	}
}

// TestEventWatchFieldSelector: a watch with a field selector delivers only
// matching events (what kubectl get events --watch --field-selector does).
func TestEventWatchFieldSelector(t *testing.T) {
	srv := servertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client := kubernetes.NewForConfigOrDie(srv.ProtobufConfig())
	events := client.CoreV1().Events("default")
	w, err := events.Watch(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web-2"})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	for _, e := range []*corev1.Event{podEvent("x.1", "web-1", "a", "Pulled", corev1.EventTypeNormal), podEvent("y.1", "web-2", "b", "Pulled", corev1.EventTypeNormal)} {
		if _, err := events.Create(ctx, e, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create: %v", err)
		}
	}
	select {
	case ev := <-w.ResultChan():
		e, ok := ev.Object.(*corev1.Event)
		if ev.Type != watch.Added || !ok || e.Name != "y.1" {
			t.Fatalf("first watch event %s %#v, want ADDED y.1", ev.Type, ev.Object)
		}
	case <-ctx.Done():
		t.Fatal("no watch event")
	}
}

// TestEventValidation checks kube-apiserver's legacy v1 event messages.
func TestEventValidation(t *testing.T) {
	srv := servertest.Start(t)
	ctx := context.Background()
	events := srv.Client.CoreV1().Events("default")

	e := podEvent("mismatch", "web-1", "a", "Scheduled", corev1.EventTypeNormal)
	e.InvolvedObject.Namespace = "kube-system"
	_, err := events.Create(ctx, e, metav1.CreateOptions{})
	servertest.WantInvalid(t, err, `involvedObject.namespace: Invalid value: "kube-system": does not match event.namespace`)

	// A PUT to a missing event creates it (201), as kube-apiserver allows.
	put := podEvent("put.1", "web-1", "a", "Pulled", corev1.EventTypeNormal)
	put.ResourceVersion = "1"
	if _, err := events.Update(ctx, put, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("create on update: %v", err)
	}

	newStyle := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "new-style"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-1"},
		EventTime:      metav1.NewMicroTime(time.Now()),
		Message:        strings.Repeat("m", 1025),
	}
	_, err = events.Create(ctx, newStyle, metav1.CreateOptions{})
	servertest.WantInvalid(t, err,
		`reportingComponent: Required value`,
		`reportingInstance: Required value`,
		`action: Required value`,
		`reason: Required value`,
		`message: Invalid value: "": can have at most 1024 characters`,
	)
}

// TestEventTableAndDiscovery checks the columns kubectl get events prints
// and that discovery lists events with short name ev.
func TestEventTableAndDiscovery(t *testing.T) {
	srv := servertest.Start(t)
	ctx := context.Background()
	if _, err := srv.Client.CoreV1().Events("default").Create(ctx, podEvent("t.1", "web-1", "a", "BackOff", corev1.EventTypeWarning), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	raw, err := srv.Client.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default/events").
		SetHeader("Accept", "application/json;as=Table;g=meta.k8s.io;v=v1").Do(ctx).Raw()
	if err != nil {
		t.Fatalf("table: %v", err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatalf("decode: %v", err)
	}
	var cols, narrow []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
		if c.Priority == 0 {
			narrow = append(narrow, c.Name)
		}
	}
	if want := []string{"Last Seen", "Type", "Reason", "Object", "Subobject", "Source", "Message", "First Seen", "Count", "Name"}; !slices.Equal(cols, want) {
		t.Errorf("columns %v, want %v", cols, want)
	}
	if want := []string{"Last Seen", "Type", "Reason", "Object", "Message"}; !slices.Equal(narrow, want) {
		t.Errorf("default columns %v, want %v", narrow, want)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("rows: %d", len(table.Rows))
	}
	c := table.Rows[0].Cells
	want := []interface{}{nil, "Warning", "BackOff", "pod/web-1", "spec.containers{app}", "kubelet, node-1", "message of t.1", nil, float64(3), "t.1"}
	for i := range want {
		if want[i] == nil {
			// Ages depend on timing (about a minute); they must be durations, not <unknown>.
			if s, _ := c[i].(string); s == "" || strings.Contains(s, "unknown") {
				t.Errorf("%s = %v", cols[i], c[i])
			}
			continue
		}
		if c[i] != want[i] {
			t.Errorf("%s = %#v, want %#v", cols[i], c[i], want[i])
		}
	}

	list, err := srv.Client.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	i := slices.IndexFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == "events" })
	if i < 0 {
		t.Fatalf("v1 lacks events")
	}
	if r := list.APIResources[i]; !r.Namespaced || r.Kind != "Event" || !slices.Equal(r.ShortNames, []string{"ev"}) || !slices.Contains(r.Verbs, "watch") {
		t.Errorf("events: %+v", r)
	}
}
