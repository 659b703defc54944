package event_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/registry/event"
)

// TestTableRow covers kubectl's fallbacks: new-style events have no
// timestamps or count (eventTime, count 1), series carry their own.
func TestTableRow(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	res := event.Resource(func() time.Time { return now })
	for _, tc := range []struct {
		name string
		e    corev1.Event
		// last, source, first, count
		want [4]interface{}
	}{
		{"new style", corev1.Event{
			EventTime:           metav1.NewMicroTime(now.Add(-90 * time.Second)),
			ReportingController: "node-controller",
		}, [4]interface{}{"90s", "node-controller", "90s", int64(1)}},
		{"series", corev1.Event{
			EventTime:           metav1.NewMicroTime(now.Add(-10 * time.Minute)),
			Series:              &corev1.EventSeries{Count: 7, LastObservedTime: metav1.NewMicroTime(now.Add(-5 * time.Second))},
			ReportingController: "kubelet", ReportingInstance: "node-1",
		}, [4]interface{}{"5s", "kubelet, node-1", "10m", int64(7)}},
		{"old style", corev1.Event{
			FirstTimestamp: metav1.NewTime(now.Add(-2 * time.Hour)), LastTimestamp: metav1.NewTime(now.Add(-3 * time.Minute)),
			Count: 4, Source: corev1.EventSource{Component: "kubelet"},
		}, [4]interface{}{"3m", "kubelet", "120m", int64(4)}},
		{"no times", corev1.Event{}, [4]interface{}{"<unknown>", "", "<unknown>", int64(1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cells := res.TableRow(&tc.e)
			got := [4]interface{}{cells[0], cells[5], cells[7], cells[8]}
			if got != tc.want {
				t.Errorf("last/source/first/count = %v, want %v", got, tc.want)
			}
		})
	}
}
