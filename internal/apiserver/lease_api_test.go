package apiserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/internal/server/servertest"
)

func newLease(name, holder string) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"test": "lease"}},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(holder),
			LeaseDurationSeconds: ptr.To[int32](30),
			AcquireTime:          &metav1.MicroTime{Time: time.Now()},
			RenewTime:            &metav1.MicroTime{Time: time.Now()},
			LeaseTransitions:     ptr.To[int32](0),
		},
	}
}

// TestLeaseConformance walks the steps of Kubernetes' conformance test
// "lease API should be available", over JSON and over protobuf.
func TestLeaseConformance(t *testing.T) {
	srv := servertest.Start(t)
	for _, tc := range []struct {
		name   string
		client kubernetes.Interface
	}{
		{"json", srv.Client},
		{"protobuf", kubernetes.NewForConfigOrDie(srv.ProtobufConfig())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			leases := tc.client.CoordinationV1().Leases("default")
			name := "conformance-" + tc.name
			created, err := leases.Create(ctx, newLease(name, "holder"), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			got, err := leases.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			if *got.Spec.HolderIdentity != "holder" || got.UID != created.UID || got.ResourceVersion != created.ResourceVersion {
				t.Fatalf("get returned %+v, created %+v", got, created)
			}
			// MicroTime keeps microseconds through the round trip.
			if !got.Spec.RenewTime.Time.Equal(created.Spec.RenewTime.Time) || got.Spec.RenewTime.Nanosecond()%1000 != 0 {
				t.Fatalf("renewTime %v, want %v", got.Spec.RenewTime, created.Spec.RenewTime)
			}

			got.Spec.HolderIdentity = ptr.To("holder2")
			updated, err := leases.Update(ctx, got, metav1.UpdateOptions{})
			if err != nil {
				t.Fatalf("update: %v", err)
			}
			if *updated.Spec.HolderIdentity != "holder2" || updated.ResourceVersion == got.ResourceVersion {
				t.Fatalf("update result %+v", updated.Spec)
			}

			patch := []byte(`{"spec":{"holderIdentity":"holder3"}}`)
			patched, err := leases.Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
			if err != nil {
				t.Fatalf("patch: %v", err)
			}
			if *patched.Spec.HolderIdentity != "holder3" || *patched.Spec.LeaseDurationSeconds != 30 {
				t.Fatalf("patch result %+v", patched.Spec)
			}

			if _, err := leases.Create(ctx, newLease(name+"-2", "other"), metav1.CreateOptions{}); err != nil {
				t.Fatalf("create second: %v", err)
			}
			list, err := leases.List(ctx, metav1.ListOptions{LabelSelector: "test=lease"})
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			if n := countNamed(list, name); n != 2 {
				t.Fatalf("list has %d of our leases, want 2: %+v", n, list.Items)
			}

			if err := leases.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "test=lease"}); err != nil {
				t.Fatalf("deletecollection: %v", err)
			}
			list, err = leases.List(ctx, metav1.ListOptions{LabelSelector: "test=lease"})
			if err != nil {
				t.Fatalf("list after deletecollection: %v", err)
			}
			if len(list.Items) != 0 {
				t.Fatalf("deletecollection left %d leases", len(list.Items))
			}

			if _, err := leases.Create(ctx, newLease(name, "again"), metav1.CreateOptions{}); err != nil {
				t.Fatalf("re-create: %v", err)
			}
			if err := leases.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatalf("delete: %v", err)
			}
			_, err = leases.Get(ctx, name, metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				t.Fatalf("get after delete: %v, want NotFound", err)
			}
			if want := fmt.Sprintf(`leases.coordination.k8s.io "%s" not found`, name); err.Error() != want {
				t.Fatalf("message %q, want %q", err.Error(), want)
			}
			if _, err := tc.client.CoordinationV1().Leases("").List(ctx, metav1.ListOptions{}); err != nil {
				t.Fatalf("list across namespaces: %v", err)
			}
		})
	}
}

func countNamed(list *coordinationv1.LeaseList, prefix string) int {
	n := 0
	for _, l := range list.Items {
		if strings.HasPrefix(l.Name, prefix) {
			n++
		}
	}
	return n
}

func TestLeaseUpdateSemantics(t *testing.T) {
	srv := servertest.Start(t)
	ctx := context.Background()
	leases := srv.Client.CoordinationV1().Leases("kube-node-lease")
	created, err := leases.Create(ctx, newLease("n1", "n1"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("stale resourceVersion is 409 Conflict", func(t *testing.T) {
		fresh := created.DeepCopy()
		fresh.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		if _, err := leases.Update(ctx, fresh, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := leases.Update(ctx, created, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			t.Fatalf("got %v, want Conflict", err)
		}
		want := `Operation cannot be fulfilled on leases.coordination.k8s.io "n1": the object has been modified; please apply your changes to the latest version and try again`
		if err.Error() != want {
			t.Fatalf("message %q\nwant    %q", err.Error(), want)
		}
	})

	t.Run("update without resourceVersion is 422", func(t *testing.T) {
		l := created.DeepCopy()
		l.ResourceVersion = ""
		l.UID = ""
		_, err := leases.Update(ctx, l, metav1.UpdateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Fatalf("got %v, want Invalid", err)
		}
		want := `Lease.coordination.k8s.io "n1" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update`
		if err.Error() != want {
			t.Fatalf("message %q\nwant    %q", err.Error(), want)
		}
	})

	t.Run("PUT of a missing lease creates it (201)", func(t *testing.T) {
		l := newLease("put-created", "x")
		l.Namespace = "kube-node-lease"
		got, err := leases.Update(ctx, l, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("update-create: %v", err)
		}
		if got.UID == "" || got.ResourceVersion == "" {
			t.Fatalf("created lease lacks uid/rv: %+v", got.ObjectMeta)
		}
	})

	t.Run("PUT of a deleted lease carrying its uid is 409", func(t *testing.T) {
		l, err := leases.Create(ctx, newLease("gone", "x"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := leases.Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		if !apierrors.IsConflict(err) {
			t.Fatalf("got %v, want Conflict", err)
		}
		want := fmt.Sprintf(`Operation cannot be fulfilled on leases.coordination.k8s.io "gone": StorageError: invalid object, Code: 4, Key: /registry/leases/kube-node-lease/gone, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: %s, UID in object meta: `, l.UID)
		if err.Error() != want {
			t.Fatalf("message %q\nwant    %q", err.Error(), want)
		}
	})

	t.Run("validation messages", func(t *testing.T) {
		l := newLease("bad", "x")
		l.Spec.LeaseDurationSeconds = ptr.To[int32](0)
		l.Spec.LeaseTransitions = ptr.To[int32](-1)
		_, err := leases.Create(ctx, l, metav1.CreateOptions{})
		want := `Lease.coordination.k8s.io "bad" is invalid: [spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0, spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0]`
		if !apierrors.IsInvalid(err) || err.Error() != want {
			t.Fatalf("got %v\nwant %s", err, want)
		}
		l = newLease("bad2", "x")
		l.Spec.PreferredHolder = ptr.To("someone")
		_, err = leases.Create(ctx, l, metav1.CreateOptions{})
		want = "Lease.coordination.k8s.io \"bad2\" is invalid: spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined"
		if !apierrors.IsInvalid(err) || err.Error() != want {
			t.Fatalf("got %v\nwant %s", err, want)
		}
	})

	t.Run("create in a missing namespace is NotFound", func(t *testing.T) {
		_, err := srv.Client.CoordinationV1().Leases("nope").Create(ctx, newLease("x", "x"), metav1.CreateOptions{})
		if !apierrors.IsNotFound(err) || err.Error() != `namespaces "nope" not found` {
			t.Fatalf("got %v", err)
		}
	})

	t.Run("already exists", func(t *testing.T) {
		_, err := leases.Create(ctx, newLease("n1", "n1"), metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) || err.Error() != `leases.coordination.k8s.io "n1" already exists` {
			t.Fatalf("got %v", err)
		}
	})

	t.Run("unknown field selector is 400", func(t *testing.T) {
		_, err := leases.List(ctx, metav1.ListOptions{FieldSelector: "spec.holderIdentity=x"})
		want := `"spec.holderIdentity" is not a known field selector: only "metadata.name", "metadata.namespace"`
		if !apierrors.IsBadRequest(err) || err.Error() != want {
			t.Fatalf("got %v\nwant %s", err, want)
		}
		list, err := leases.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=n1"})
		if err != nil || len(list.Items) != 1 || list.Items[0].Name != "n1" {
			t.Fatalf("metadata.name selector: %v %+v", err, list)
		}
	})

	t.Run("dryRun does not persist", func(t *testing.T) {
		if _, err := leases.Create(ctx, newLease("dry", "x"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Fatal(err)
		}
		if _, err := leases.Get(ctx, "dry", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("dry-run create persisted: %v", err)
		}
	})
}

func TestLeaseListPaging(t *testing.T) {
	srv := servertest.Start(t)
	ctx := context.Background()
	leases := srv.Client.CoordinationV1().Leases("default")
	for i := 0; i < 25; i++ {
		if _, err := leases.Create(ctx, newLease(fmt.Sprintf("l%02d", i), "h"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	opts := metav1.ListOptions{Limit: 10}
	pages := 0
	for {
		list, err := leases.List(ctx, opts)
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		pages++
		for _, l := range list.Items {
			names = append(names, l.Name)
		}
		if pages == 1 {
			if list.RemainingItemCount == nil || *list.RemainingItemCount != 15 {
				t.Fatalf("remainingItemCount = %v, want 15", list.RemainingItemCount)
			}
			// A write between pages must not show up: pages are a snapshot.
			if _, err := leases.Create(ctx, newLease("l00a", "h"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	if pages != 3 || len(names) != 25 {
		t.Fatalf("%d pages, %d names: %v", pages, len(names), names)
	}
	for i, n := range names {
		if n != fmt.Sprintf("l%02d", i) {
			t.Fatalf("names out of order at %d: %v", i, names)
		}
	}
}

func TestLeaseWatch(t *testing.T) {
	srv := servertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leases := srv.Client.CoordinationV1().Leases("default")
	l, err := leases.Create(ctx, newLease("w", "a"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := leases.Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	l.Spec.HolderIdentity = ptr.To("b")
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := leases.Delete(ctx, "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect := []watch.EventType{watch.Modified, watch.Deleted}
	for _, want := range expect {
		select {
		case ev := <-w.ResultChan():
			if ev.Type != want {
				t.Fatalf("event %s, want %s (%+v)", ev.Type, want, ev.Object)
			}
			if got := ev.Object.(*coordinationv1.Lease); *got.Spec.HolderIdentity != "b" {
				t.Fatalf("event object holder %q", *got.Spec.HolderIdentity)
			}
		case <-ctx.Done():
			t.Fatalf("no %s event", want)
		}
	}
}

// TestStreamingList checks the WatchList protocol: ADDED for the state, then
// a BOOKMARK annotated k8s.io/initial-events-end.
func TestStreamingList(t *testing.T) {
	srv := servertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := kubernetes.NewForConfigOrDie(srv.ProtobufConfig())
	leases := client.CoordinationV1().Leases("default")
	for _, n := range []string{"a", "b", "c"} {
		if _, err := leases.Create(ctx, newLease(n, n), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w, err := leases.Watch(ctx, metav1.ListOptions{
		SendInitialEvents:    ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var added []string
	for {
		select {
		case ev := <-w.ResultChan():
			switch ev.Type {
			case watch.Added:
				added = append(added, ev.Object.(*coordinationv1.Lease).Name)
			case watch.Bookmark:
				l := ev.Object.(*coordinationv1.Lease)
				if l.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
					t.Fatalf("bookmark without initial-events-end: %+v", l.ObjectMeta)
				}
				if strings.Join(added, ",") != "a,b,c" {
					t.Fatalf("initial events %v", added)
				}
				return
			default:
				t.Fatalf("unexpected event %s", ev.Type)
			}
		case <-ctx.Done():
			t.Fatal("no initial-events-end bookmark")
		}
	}
}

// Nodes, unlike leases, accept an update without a resourceVersion.
func TestUnconditionalUpdate(t *testing.T) {
	srv := servertest.Start(t)
	ctx := context.Background()
	nodes := srv.Client.CoreV1().Nodes()
	n, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "u1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.ResourceVersion = ""
	n.Labels = map[string]string{"x": "y"}
	got, err := nodes.Update(ctx, n, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("unconditional node update: %v", err)
	}
	if got.Labels["x"] != "y" || got.ResourceVersion == "" {
		t.Fatalf("update result %+v", got.ObjectMeta)
	}
}
