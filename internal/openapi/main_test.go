package openapi

import (
	"testing"

	"go.uber.org/goleak"
	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/leasehold/leasehold/internal/registry"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testSet describes the resources Leasehold serves with the k8s.io/api
// types; only the fields this package reads are filled in.
func testSet() *registry.Set {
	coordV1 := schema.GroupVersion{Group: "coordination.k8s.io", Version: "v1"}
	coordV1beta1 := schema.GroupVersion{Group: "coordination.k8s.io", Version: "v1beta1"}
	core := schema.GroupVersion{Version: "v1"}
	return registry.NewSet(
		&registry.Resource{
			GroupVersion: coordV1, Resource: "leases", SingularName: "lease", Kind: "Lease", ListKind: "LeaseList",
			Namespaced: true, AllowCreateOnUpdate: true,
			New:     func() runtime.Object { return &coordinationv1.Lease{} },
			NewList: func() runtime.Object { return &coordinationv1.LeaseList{} },
		},
		&registry.Resource{
			GroupVersion: coordV1beta1, Resource: "leasecandidates", SingularName: "leasecandidate",
			Kind: "LeaseCandidate", ListKind: "LeaseCandidateList", Namespaced: true,
			New:     func() runtime.Object { return &coordinationv1beta1.LeaseCandidate{} },
			NewList: func() runtime.Object { return &coordinationv1beta1.LeaseCandidateList{} },
		},
		&registry.Resource{
			GroupVersion: core, Resource: "nodes", SingularName: "node", Kind: "Node", ListKind: "NodeList",
			ShortNames: []string{"no"}, StatusSubresource: true,
			New:     func() runtime.Object { return &corev1.Node{} },
			NewList: func() runtime.Object { return &corev1.NodeList{} },
		},
		&registry.Resource{
			GroupVersion: core, Resource: "namespaces", SingularName: "namespace", Kind: "Namespace",
			ListKind: "NamespaceList", ShortNames: []string{"ns"}, StatusSubresource: true,
			New:     func() runtime.Object { return &corev1.Namespace{} },
			NewList: func() runtime.Object { return &corev1.NamespaceList{} },
		},
		&registry.Resource{
			GroupVersion: core, Resource: "events", SingularName: "event", Kind: "Event", ListKind: "EventList",
			ShortNames: []string{"ev"}, Namespaced: true,
			New:     func() runtime.Object { return &corev1.Event{} },
			NewList: func() runtime.Object { return &corev1.EventList{} },
		},
	)
}

func newTestOpenAPI(t testing.TB) *OpenAPI {
	t.Helper()
	o, err := New(testSet(), "v1.33.0")
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return o
}
