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
