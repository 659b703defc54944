package lease_test

import (
	"context"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/internal/server/servertest"
)

// TestOwnerReferenceValidation proves that ownerReferences are validated as
// kube-apiserver validates them (apimachinery's ValidateOwnerReferences,
// reached through the generic ObjectMeta validation) on create and update:
// apiVersion, kind, name and uid are required, v1/Event may not be an owner,
// and only one reference may be the controller. A kubelet's node lease,
// owned by its Node, is accepted.
func TestOwnerReferenceValidation(t *testing.T) {
	srv := servertest.Start(t)
	ctx := context.Background()
	leases := srv.Client.CoordinationV1().Leases("kube-node-lease")
	withOwners := func(name string, refs ...metav1.OwnerReference) *coordinationv1.Lease {
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: refs},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40)},
		}
	}
	// A real Node: the garbage collector would delete a lease whose owner
	// does not exist while the test still uses it.
	n, err := srv.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "node-1", UID: n.UID}

	for _, tc := range []struct {
		name string
		refs []metav1.OwnerReference
		want []string
	}{
		{"all fields empty", []metav1.OwnerReference{{}}, []string{
			"metadata.ownerReferences[0].apiVersion: Required value: must not be empty",
			"metadata.ownerReferences[0].kind: Required value: must not be empty",
			"metadata.ownerReferences[0].name: Required value: must not be empty",
			"metadata.ownerReferences[0].uid: Required value: must not be empty",
		}},
		{"bad apiVersion", []metav1.OwnerReference{{APIVersion: "a/b/c", Kind: "Node", Name: "n", UID: "u"}}, []string{
			`metadata.ownerReferences[0].apiVersion: Invalid value: "a/b/c": must be <group>/<version> or <version>`,
		}},
		{"event owner", []metav1.OwnerReference{{APIVersion: "v1", Kind: "Event", Name: "e", UID: "u"}}, []string{
			"metadata.ownerReferences[0]: Invalid value:",
			"/v1, Kind=Event is disallowed from being an owner",
		}},
		{"two controllers", []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "Node", Name: "a", UID: "1", Controller: ptr.To(true)},
			{APIVersion: "v1", Kind: "Node", Name: "b", UID: "2", Controller: ptr.To(true)},
		}, []string{
			`metadata.ownerReferences: Invalid value:`,
			`Only one reference can have Controller set to true. Found "true" in references for Node/a and Node/b`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := leases.Create(ctx, withOwners("owned-"+strings.ReplaceAll(tc.name, " ", "-"), tc.refs...), metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want 422 Invalid, got %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err.Error(), w)
				}
			}
		})
	}

	created, err := leases.Create(ctx, withOwners("node-1", node), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a node lease owned by its Node was refused: %v", err)
	}
	if len(created.OwnerReferences) != 1 || created.OwnerReferences[0] != node {
		t.Errorf("owner references not kept: %+v", created.OwnerReferences)
	}
	// The same rules apply on update.
	created.OwnerReferences = append(created.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "node-2"})
	_, err = leases.Update(ctx, created, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "metadata.ownerReferences[1].uid: Required value: must not be empty") {
		t.Fatalf("update with an owner without uid: %v", err)
	}
}
