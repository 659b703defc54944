package apiserver_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/internal/apiserver"
	"github.com/leasehold/leasehold/internal/watchcache"
)

// The watch cache keeps a lease's older versions as thin events (the
// renewal's times alone) once it is renewed again. A watch reading the
// history later must still get every version exactly as the write
// answered it, in JSON and in protobuf: renewals that moved only
// renewTime, ones that also moved the renewer's managedFields time (a
// later second), and changes of the holder and labels, which stay whole.
func TestThinLeaseVersionsWatchAsAnswered(t *testing.T) {
	var clock sync.Mutex
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	h := newDirectHandler(t, func(c *apiserver.Config) {
		c.Now = func() time.Time {
			clock.Lock()
			defer clock.Unlock()
			return now
		}
	})
	tick := func(d time.Duration) {
		clock.Lock()
		now = now.Add(d)
		clock.Unlock()
	}
	pb := protobuf.NewSerializer(h.scheme, h.scheme)
	const path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
	createNamespace(t, h.api, "kube-node-lease")
	renew := time.Date(2026, 11, 28, 10, 0, 0, 123456000, time.Local)
	l := &coordinationv1.Lease{
		TypeMeta: metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: "kube-node-lease",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "node-uid"}}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("n1"), LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime: ptr.To(metav1.NewMicroTime(renew))},
	}
	var answers []*coordinationv1.Lease
	write := func(method, p string, change func(*coordinationv1.Lease)) {
		t.Helper()
		next := l.DeepCopy()
		change(next)
		want := 200
		if method == "POST" {
			want = 201
		}
		l = renewOnce(t, h.api, pb, method, p, next, want)
		answers = append(answers, l)
	}
	write("POST", path, func(*coordinationv1.Lease) {})
	first := h.waitCached(t, l.ResourceVersion)
	renewal := func(l *coordinationv1.Lease) {
		renew = renew.Add(10 * time.Second)
		l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(renew))
	}
	for range 3 {
		write("PUT", path+"/n1", renewal)
	}
	tick(2 * time.Second) // the renewer's managedFields time moves too
	write("PUT", path+"/n1", renewal)
	write("PUT", path+"/n1", func(l *coordinationv1.Lease) { renewal(l); l.Spec.HolderIdentity = ptr.To("n2") })
	write("PUT", path+"/n1", renewal)
	write("PUT", path+"/n1", func(l *coordinationv1.Lease) { renewal(l); l.Labels = map[string]string{"zone": "a"} })
	tick(time.Second)
	write("PUT", path+"/n1", renewal)
	write("PUT", path+"/n1", renewal)

	h.waitCached(t, l.ResourceVersion)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Every version but the newest and the two its successor changed more
	// than the renewal times of (the last before the holder and label
	// changes) is thin.
	if thin, _ := h.cache.ThinEvents(); thin != len(answers)-3 {
		t.Errorf("%d of the lease's %d versions are thin, want %d", thin, len(answers), len(answers)-3)
	}
	w, err := h.cache.Watch(ctx, watchcache.WatchOptions{Prefix: "/registry/leases/kube-node-lease/n1", FromRevision: first - 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i, want := range answers {
		var ev watchcache.Event
		select {
		case ev = <-w.Events():
		case <-ctx.Done():
			t.Fatalf("version %d: no event", i)
		}
		got := ev.Object.(*coordinationv1.Lease)
		gotJSON, err1 := json.Marshal(got)
		wantJSON, err2 := json.Marshal(want)
		gotPB, err3 := got.Marshal()
		wantPB, err4 := want.Marshal()
		for _, err := range []error{err1, err2, err3, err4} {
			if err != nil {
				t.Fatal(err)
			}
		}
		if string(gotJSON) != string(wantJSON) || string(gotPB) != string(wantPB) {
			t.Errorf("version %d: the watch sends\n%s\nthe write answered\n%s", i, gotJSON, wantJSON)
		}
	}
}
