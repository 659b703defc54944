package leasecopy

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func lease(transitions *int32, renew, acquire *time.Time) *coordinationv1.Lease {
	l := &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{LeaseTransitions: transitions}}
	if renew != nil {
		l.Spec.RenewTime = &metav1.MicroTime{Time: *renew}
	}
	if acquire != nil {
		l.Spec.AcquireTime = &metav1.MicroTime{Time: *acquire}
	}
	return l
}

func TestTargetNewer(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Second)
	for _, tc := range []struct {
		name           string
		target, source *coordinationv1.Lease
		want           bool
	}{
		{"later renewal on the target", lease(nil, &t1, nil), lease(nil, &t0, nil), true},
		{"later renewal on the source", lease(nil, &t0, nil), lease(nil, &t1, nil), false},
		{"equal renewals", lease(nil, &t0, nil), lease(nil, &t0, nil), false},
		{"more transitions beat a later renewal", lease(ptr.To[int32](2), &t0, nil), lease(ptr.To[int32](1), &t1, nil), true},
		{"fewer transitions lose to an earlier renewal", lease(ptr.To[int32](1), &t1, nil), lease(ptr.To[int32](2), &t0, nil), false},
		{"unset transitions are zero", lease(ptr.To[int32](0), &t1, nil), lease(nil, &t0, nil), true},
		{"a renewal beats none", lease(nil, &t0, nil), lease(nil, nil, nil), true},
		{"none loses to a renewal", lease(nil, nil, nil), lease(nil, &t0, nil), false},
		{"equal renewals, later acquisition on the target", lease(nil, &t0, &t1), lease(nil, &t0, &t0), true},
	} {
		if got := targetNewer(tc.target, tc.source); got != tc.want {
			t.Errorf("%s: targetNewer = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSameContent(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	base := func() *coordinationv1.Lease {
		l := lease(ptr.To[int32](1), &t0, &t0)
		l.Spec.HolderIdentity = ptr.To("a")
		l.Labels = map[string]string{"k": "v"}
		return l
	}
	other := base()
	other.UID, other.ResourceVersion, other.CreationTimestamp = "x", "9", metav1.Time{Time: t0}
	if !sameContent(base(), other) {
		t.Error("identity (uid, resourceVersion, creationTimestamp) counted as content")
	}
	empty := base()
	empty.Annotations, empty.OwnerReferences = map[string]string{}, []metav1.OwnerReference{}
	if !sameContent(base(), empty) {
		t.Error("empty and nil annotations or ownerReferences differ")
	}
	for name, change := range map[string]func(*coordinationv1.Lease){
		"holder":          func(l *coordinationv1.Lease) { l.Spec.HolderIdentity = ptr.To("b") },
		"preferredHolder": func(l *coordinationv1.Lease) { l.Spec.PreferredHolder = ptr.To("b") },
		"label":           func(l *coordinationv1.Lease) { l.Labels["k"] = "w" },
		"annotation":      func(l *coordinationv1.Lease) { l.Annotations = map[string]string{"a": "b"} },
		"owner":           func(l *coordinationv1.Lease) { l.OwnerReferences = []metav1.OwnerReference{{Name: "o"}} },
	} {
		l := base()
		change(l)
		if sameContent(base(), l) {
			t.Errorf("a different %s counted as the same content", name)
		}
	}
}

func TestWithContentKeepsIdentity(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	dst := lease(nil, nil, nil)
	dst.Name, dst.Namespace, dst.UID, dst.ResourceVersion = "n", "ns", "dst-uid", "7"
	src := lease(ptr.To[int32](3), &t0, &t0)
	src.UID, src.Labels = "src-uid", map[string]string{"k": "v"}
	got := withContent(dst, src)
	if got.UID != "dst-uid" || got.ResourceVersion != "7" || got.Name != "n" || !sameContent(got, src) {
		t.Errorf("withContent = %+v: want dst's identity with src's content", got)
	}
	got.Labels["k"] = "changed"
	if src.Labels["k"] != "v" {
		t.Error("withContent shares src's labels map")
	}
}
