package bench

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// offlineLeanLeases is a lean Lease API that is never connected: enough to
// exercise encoding, decoding and URLs without a server.
func offlineLeanLeases(t *testing.T, contentType string) *leanLeases {
	t.Helper()
	return testLeanLeases(t, contentType, nil, "ns")
}

// testLeanLeases is a lean Lease API in namespace over client, for a server
// at https://127.0.0.1:1/prefix.
func testLeanLeases(t testing.TB, contentType string, client *http.Client, namespace string) *leanLeases {
	t.Helper()
	cfg := &rest.Config{Host: "https://127.0.0.1:1/prefix"}
	if err := setContentType(cfg, contentType); err != nil {
		t.Fatal(err)
	}
	urls, err := newLeaseURLs(cfg)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := newLeanConn(cfg, client, urls)
	if err != nil {
		t.Fatal(err)
	}
	return newLeanLeases(conn, namespace)
}

func TestLeanLeaseURLs(t *testing.T) {
	l := offlineLeanLeases(t, ContentTypeProtobuf)
	one := l.conn.urls.get("ns", "n1")
	if got, want := one.String(), "https://127.0.0.1:1/prefix/apis/coordination.k8s.io/v1/namespaces/ns/leases/n1"; got != want {
		t.Errorf("lease URL %s, want %s", got, want)
	}
	if again := l.conn.urls.get("ns", "n1"); again != one {
		t.Error("a lease's URL was built twice")
	}
	if got, want := l.conn.urls.get("ns", "").String(), "https://127.0.0.1:1/prefix/apis/coordination.k8s.io/v1/namespaces/ns/leases"; got != want {
		t.Errorf("collection URL %s, want %s", got, want)
	}
}

func TestNewClientsOfKindRejectsUnknownKinds(t *testing.T) {
	if _, err := NewClientsOfKind(&rest.Config{Host: "https://127.0.0.1:1"}, "fast", ContentTypeJSON, 1); err == nil {
		t.Fatal("client kind \"fast\" accepted")
	}
}

// A body the transport has not closed yet may still be read: the next
// request must not write over its buffer.
func TestLeanRequestBufferIsReusedOnlyOnceClosed(t *testing.T) {
	l := offlineLeanLeases(t, ContentTypeJSON)
	first := newLease("ns", &leaseSlot{name: "first", holder: "h"}, 40, time.Now())
	body1, err := l.encode(first)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Clone(l.out.Bytes())
	body2, err := l.encode(newLease("ns", &leaseSlot{name: "second-with-a-longer-name", holder: "h"}, 40, time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if body2 == body1 {
		t.Fatal("an unclosed body was reused")
	}
	if got, _ := io.ReadAll(body1); !bytes.Equal(got, want) {
		t.Fatalf("the unclosed body now reads %q, want %q", got, want)
	}
	_ = body2.Close()
	body3, err := l.encode(first)
	if err != nil {
		t.Fatal(err)
	}
	if body3 != body2 {
		t.Error("a closed body was not reused")
	}
	if got, _ := io.ReadAll(body3); !bytes.Equal(got, want) {
		t.Errorf("the reused body reads %q, want %q", got, want)
	}
}

// Decoding into a reused Lease must not keep fields of its last life that
// the new answer does not have (JSON decoding fills in, it does not clear).
func TestLeanDecodeIntoSpareClearsItFirst(t *testing.T) {
	for _, ct := range []string{ContentTypeJSON, ContentTypeProtobuf} {
		t.Run(ct, func(t *testing.T) {
			l := offlineLeanLeases(t, ct)
			answer := newLease("ns", &leaseSlot{name: "n1", holder: "h"}, 40, time.Now())
			answer.ResourceVersion = "7"
			if _, err := l.encode(answer); err != nil {
				t.Fatal(err)
			}
			l.in.Reset()
			l.in.Write(l.out.Bytes())
			spare := newLease("ns", &leaseSlot{name: "old", holder: "old-holder"}, 40, time.Now())
			spare.Labels = map[string]string{"stale": "true"}
			spare.Spec.LeaseTransitions = new(int32)
			l.spare = spare
			got, err := l.decodeLease(l.conn.mediaType, "PUT", l.conn.urls.get("ns", "n1"))
			if err != nil {
				t.Fatal(err)
			}
			if got != spare {
				t.Error("the spare Lease was not reused")
			}
			if got.Name != "n1" || got.ResourceVersion != "7" || *got.Spec.HolderIdentity != "h" ||
				got.Labels != nil || got.Spec.LeaseTransitions != nil {
				t.Errorf("decoded %+v, want the answer alone", got)
			}
		})
	}
}

// The lean client's failures are the apierrors values the typed client's
// are, for each content type, so that the renewer handles them alike.
func TestE2ELeanErrorsAreAPIErrors(t *testing.T) {
	for _, ct := range []string{ContentTypeJSON, ContentTypeProtobuf} {
		t.Run(ct, func(t *testing.T) {
			clients := newTestClientsOfKind(t, ClientLean, ct)
			cfg := Config{Namespace: testNamespace("lean-errors-" + ct), Clients: 1}.withDefaults()
			client, _ := clients.Factory()(0)
			ctx := context.Background()
			if err := ensureNamespace(ctx, client, cfg.Namespace, cfg.RequestTimeout); err != nil {
				t.Fatal(err)
			}
			leases := leaseAPIFor(client, cfg.Namespace)
			created, err := leases.Create(ctx, nil, newLease(cfg.Namespace, &leaseSlot{name: "n1", holder: "n1"}, 40, time.Now()))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := leases.Create(ctx, nil, newLease(cfg.Namespace, &leaseSlot{name: "n1", holder: "n1"}, 40, time.Now())); !apierrors.IsAlreadyExists(err) {
				t.Errorf("creating an existing lease: %v, want AlreadyExists", err)
			}
			if _, err := leases.Get(ctx, nil, "missing"); !apierrors.IsNotFound(err) || ErrorKind(err) != string(metav1.StatusReasonNotFound) {
				t.Errorf("getting a missing lease: %v (kind %s), want NotFound", err, ErrorKind(err))
			}

			// Another writer bumps the lease: our copy is stale.
			other := created.DeepCopy()
			other.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
			if _, err := clients.sets[0].CoordinationV1().Leases(cfg.Namespace).Update(ctx, other, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			stale := created.DeepCopy()
			_, err = leases.Update(ctx, nil, created)
			if !apierrors.IsConflict(err) || ErrorKind(err) != KindConflict {
				t.Fatalf("updating a stale lease: %v (kind %s), want a conflict", err, ErrorKind(err))
			}
			if created.ResourceVersion != stale.ResourceVersion || created.Name != stale.Name {
				t.Errorf("a failed update changed the caller's lease to %+v", created)
			}
			current, err := leases.Get(ctx, nil, "n1")
			if err != nil {
				t.Fatal(err)
			}
			current.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Truncate(time.Microsecond)}
			sent := current.Spec.RenewTime.Time
			updated, err := leases.Update(ctx, nil, current)
			if err != nil {
				t.Fatal(err)
			}
			if updated.ResourceVersion == stale.ResourceVersion || !updated.Spec.RenewTime.Time.Equal(sent) {
				t.Errorf("update answered %+v, want a new resourceVersion and renewTime %v", updated, sent)
			}
		})
	}
}

// A parked answer renews as the decoded answer would: unparking gives the
// answer's lease, whatever the scratch lease held before, so the request
// bytes are those of the answer with the new renewTime.
func TestLeanParkedAnswerRenewsAsTheDecodedOne(t *testing.T) {
	for _, ct := range []string{ContentTypeJSON, ContentTypeProtobuf} {
		t.Run(ct, func(t *testing.T) {
			l := offlineLeanLeases(t, ct)
			full := newLease("ns", &leaseSlot{name: "n1", holder: "h", owners: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "n1", UID: "u1"}}}, 40, time.Now())
			full.ResourceVersion, full.Labels = "7", map[string]string{"a": "b"}
			full.Spec.LeaseTransitions = new(int32)
			bare := newLease("ns", &leaseSlot{name: "n2", holder: "h2"}, 40, time.Now())
			bare.ResourceVersion = "8"
			renewTime := time.Now().Add(time.Minute).Truncate(time.Microsecond)
			for _, answer := range []*coordinationv1.Lease{full, bare} {
				if _, err := l.encode(answer); err != nil {
					t.Fatal(err)
				}
				parked := bytes.Clone(l.out.Bytes())
				// What the renewal used to send: the decoded answer with
				// the new renewTime.
				decoded := &coordinationv1.Lease{}
				if _, _, err := l.conn.decoder.Decode(parked, nil, decoded); err != nil {
					t.Fatal(err)
				}
				decoded.Spec.RenewTime = &metav1.MicroTime{Time: renewTime}
				if _, err := l.encode(decoded); err != nil {
					t.Fatal(err)
				}
				want := bytes.Clone(l.out.Bytes())

				lease, err := l.unpark(parked)
				if err != nil {
					t.Fatal(err)
				}
				lease.Spec.RenewTime = &metav1.MicroTime{Time: renewTime}
				if _, err := l.encode(lease); err != nil {
					t.Fatal(err)
				}
				if got := l.out.Bytes(); !bytes.Equal(got, want) {
					t.Fatalf("%s: renewing the parked answer sends\n%q\nwant\n%q", answer.Name, got, want)
				}
			}
		})
	}
}

func TestLeanUnparkRefusesWhatIsNotALease(t *testing.T) {
	l := offlineLeanLeases(t, ContentTypeProtobuf)
	if _, err := l.unpark([]byte("k8s\x00garbage")); err == nil {
		t.Fatal("garbage unparked")
	}
}
