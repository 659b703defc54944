package eventttl_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/leasehold/leasehold/internal/server"
	"github.com/leasehold/leasehold/internal/server/servertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestExpiredEventsAreDeleted(t *testing.T) {
	events := startWithTTL(t, 2*time.Second, 200*time.Millisecond)
	ctx := context.Background()
	createEvent(t, events, "fresh", time.Now().Add(time.Hour))
	createEvent(t, events, "ageing", time.Now())
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
	// A TTL of 4 s leaves the update 3 s to land before the first
	// timestamp expires: on a loaded machine (group commits of 200 ms) the
	// 1 s a 2 s TTL left was once not enough, and the event was gone.
	events := startWithTTL(t, 4*time.Second, 100*time.Millisecond)
	ctx := context.Background()
	ev := createEvent(t, events, "retouched", time.Now())
	time.Sleep(time.Second) // several sweeps see the first timestamp
	ev.LastTimestamp = metav1.NewTime(time.Now().Add(time.Hour))
	ev.Count = 2
	if _, err := events.Update(ctx, ev, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second) // past the first timestamp's expiry
	if _, err := events.Get(ctx, "retouched", metav1.GetOptions{}); err != nil {
		t.Fatalf("the event was expired by the timestamp it had before it was touched again: %v", err)
	}
}

// startWithTTL starts a server whose events expire ttl after their last
// update, swept every interval, and returns its default namespace's events.
func startWithTTL(t *testing.T, ttl, interval time.Duration) typedcorev1.EventInterface {
	t.Helper()
	srv := servertest.Start(t, func(c *server.Config) {
		c.EventTTL = ttl
		c.EventTTLInterval = interval
	})
	return srv.Client.CoreV1().Events("default")
}

// createEvent creates an event about a node, last seen at last.
func createEvent(t *testing.T, events typedcorev1.EventInterface, name string, last time.Time) *corev1.Event {
	t.Helper()
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name},
		InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "n1"},
		Reason:         "Test", Message: "m", Type: corev1.EventTypeNormal,
		Source:         corev1.EventSource{Component: "test"},
		FirstTimestamp: metav1.NewTime(last), LastTimestamp: metav1.NewTime(last),
	}
	created, err := events.Create(context.Background(), ev, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}
