package bench

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// leaseAPI is the part of the Lease API a renewal uses, in one namespace.
// Errors from the server are apierrors values (so apierrors.IsConflict and
// ErrorKind read them) whichever implementation made the request. Every
// request carries auth, the credentials of the node whose lease it is, or
// with nil the connection's own.
type leaseAPI interface {
	// Update writes lease. On success the caller gives lease up and uses
	// the returned object instead: an implementation may reuse lease's
	// memory for a later answer. On failure lease is untouched.
	Update(ctx context.Context, auth authorization, lease *coordinationv1.Lease) (*coordinationv1.Lease, error)
	Get(ctx context.Context, auth authorization, name string) (*coordinationv1.Lease, error)
	Create(ctx context.Context, auth authorization, lease *coordinationv1.Lease) (*coordinationv1.Lease, error)
}

// leaseAPIProvider is implemented by clientsets that carry their own,
// cheaper Lease API next to the typed one (the lean clients of Clients).
type leaseAPIProvider interface {
	leaseAPI(namespace string) leaseAPI
}

// leaseAPIFor is the Lease API worker code renews through: client's own if
// it offers one, otherwise client-go's typed client. The result belongs to
// one goroutine: the lean implementation keeps per-caller buffers.
func leaseAPIFor(client kubernetes.Interface, namespace string) leaseAPI {
	if p, ok := client.(leaseAPIProvider); ok {
		return p.leaseAPI(namespace)
	}
	return typedLeases{client.CoordinationV1().Leases(namespace)}
}

// typedLeases is the Lease API through client-go's typed clientset, which
// takes no per-request headers: a node's authorization travels in the
// context (withAuthorization).
type typedLeases struct {
	leases coordinationv1client.LeaseInterface
}

func (t typedLeases) Update(ctx context.Context, auth authorization, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	return t.leases.Update(withAuthorization(ctx, auth), lease, metav1.UpdateOptions{})
}

func (t typedLeases) Get(ctx context.Context, auth authorization, name string) (*coordinationv1.Lease, error) {
	return t.leases.Get(withAuthorization(ctx, auth), name, metav1.GetOptions{})
}

func (t typedLeases) Create(ctx context.Context, auth authorization, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	return t.leases.Create(withAuthorization(ctx, auth), lease, metav1.CreateOptions{})
}
