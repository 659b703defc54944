package eventttl_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/server"
	"github.com/leasehold/leasehold/internal/server/servertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestExpiredEventsAreDeleted(t *testing.T) {
	srv := servertest.Start(t, func(c *server.Config) {
		c.EventTTL = 2 * time.Second
		c.EventTTLInterval = 200 * time.Millisecond
	})
	ctx := context.Background()
	events := srv.Client.CoreV1().Events("default")
	mk := func(name string, last time.Time) {
		ev := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name},
			InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "n1"},
			Reason:         "Test", Message: "m", Type: corev1.EventTypeNormal,
			Source:         corev1.EventSource{Component: "test"},
			FirstTimestamp: metav1.NewTime(last), LastTimestamp: metav1.NewTime(last),
		}
		if _, err := events.Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("fresh", time.Now().Add(time.Hour))
	mk("ageing", time.Now())
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := events.Get(ctx, "ageing", metav1.GetOptions{}); err != nil {
			if _, err := events.Get(ctx, "fresh", metav1.GetOptions{}); err != nil {
				t.Fatalf("a fresh event was deleted: %v", err)
			}
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("the expired event was not deleted")
}

// A sweep remembers each event's timestamp by revision: an event touched
// again after a sweep saw it must be judged by its new timestamp.
func TestRetouchedEventOutlivesItsFirstTimestamp(t *testing.T) {
	srv := servertest.Start(t, func(c *server.Config) {
		c.EventTTL = 2 * time.Second
		c.EventTTLInterval = 100 * time.Millisecond
	})
	ctx := context.Background()
	events := srv.Client.CoreV1().Events("default")
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "retouched"},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "n1"},
		Reason:         "Test", Message: "m", Type: corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: "test"},
		FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(),
	}
	ev, err := events.Create(ctx, ev, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // several sweeps see the first timestamp
	ev.LastTimestamp = metav1.NewTime(time.Now().Add(time.Hour))
	ev.Count = 2
	if _, err := events.Update(ctx, ev, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // past the first timestamp's expiry
	if _, err := events.Get(ctx, "retouched", metav1.GetOptions{}); err != nil {
		t.Fatalf("the event was expired by the timestamp it had before it was touched again: %v", err)
	}
}
