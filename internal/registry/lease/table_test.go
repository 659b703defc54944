package lease_test

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/leasehold/leasehold/internal/registry/lease"
)

func TestWideCells(t *testing.T) {
	renew := time.Date(2024, 1, 2, 3, 4, 5, 120000000, time.UTC)
	spec := func(d *int32, r *time.Time) *coordinationv1.LeaseSpec {
		s := &coordinationv1.LeaseSpec{LeaseDurationSeconds: d}
		if r != nil {
			s.RenewTime = &metav1.MicroTime{Time: r.In(time.FixedZone("x", 3600))}
		}
		return s
	}
	for _, tc := range []struct {
		name             string
		spec             *coordinationv1.LeaseSpec
		now              time.Time
		renewCell, inCel string
	}{
		{"live", spec(ptr.To[int32](40), &renew), renew.Add(8 * time.Second), "2024-01-02T03:04:05.120000Z", "32s"},
		{"expired", spec(ptr.To[int32](40), &renew), renew.Add(5*time.Minute + 40*time.Second), "2024-01-02T03:04:05.120000Z", "-5m"},
		{"no duration", spec(nil, &renew), renew, "2024-01-02T03:04:05.120000Z", "<none>"},
		{"never renewed", spec(ptr.To[int32](15), nil), renew, "<none>", "<none>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lease.RenewTimeCell(tc.spec); got != tc.renewCell {
				t.Errorf("RenewTimeCell = %q, want %q", got, tc.renewCell)
			}
			if got := lease.ExpiresInCell(tc.spec, tc.now); got != tc.inCel {
				t.Errorf("ExpiresInCell = %q, want %q", got, tc.inCel)
			}
		})
	}
}
