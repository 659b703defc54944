package lease

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/leasehold/leasehold/internal/registry"
)

// columns are Kubernetes' lease columns (NAME, HOLDER, AGE) followed by two
// of our own at priority 1, so that `kubectl get lease` prints exactly what
// kube-apiserver prints and only `-o wide` adds RENEW TIME and EXPIRES IN:
// the two facts a person debugging a heartbeat or an election needs, and
// which otherwise take `-o yaml` and arithmetic.
var columns = []metav1.TableColumnDefinition{
	registry.NameColumn,
	{Name: "Holder", Type: "string", Description: coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]},
	registry.AgeColumn,
	{Name: "Renew Time", Type: "string", Priority: 1, Description: coordinationv1.LeaseSpec{}.SwaggerDoc()["renewTime"]},
	{Name: "Expires In", Type: "string", Priority: 1,
		Description: "renewTime + leaseDurationSeconds - now; negative once the lease has expired, by how long ago"},
}

// tableRow renders one lease's cells for columns.
func tableRow(now func() time.Time) func(runtime.Object) []interface{} {
	return func(obj runtime.Object) []interface{} {
		l := obj.(*coordinationv1.Lease)
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		t := now()
		return []interface{}{l.Name, holder, registry.Age(l.CreationTimestamp, t), RenewTimeCell(&l.Spec), ExpiresInCell(&l.Spec, t)}
	}
}

// RenewTimeCell is the RENEW TIME cell: spec.renewTime exactly as -o yaml
// prints it (RFC 3339, six fractional digits), or <none>.
func RenewTimeCell(spec *coordinationv1.LeaseSpec) string {
	if spec.RenewTime == nil {
		return "<none>"
	}
	return spec.RenewTime.UTC().Format(metav1.RFC3339Micro)
}

// ExpiresInCell is the EXPIRES IN cell: how long until renewTime +
// leaseDurationSeconds, in kubectl's short human form ("32s"), prefixed
// with "-" once that moment has passed ("-5m"); <none> without a renew
// time or a duration, since such a lease never expires by the clock.
func ExpiresInCell(spec *coordinationv1.LeaseSpec, now time.Time) string {
	if spec.RenewTime == nil || spec.LeaseDurationSeconds == nil {
		return "<none>"
	}
	left := spec.RenewTime.Add(time.Duration(*spec.LeaseDurationSeconds) * time.Second).Sub(now)
	if left < 0 {
		return "-" + duration.HumanDuration(-left)
	}
	return duration.HumanDuration(left)
}
