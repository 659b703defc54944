package leasecopy

import (
	"context"
	"errors"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// FieldManager is the manager name the copy's API writes carry, so that a
// target's managedFields say which fields the copy set.
const FieldManager = "leasehold-leases-copy"

// apiTarget writes through a Kubernetes API (Leasehold's or a cluster's).
type apiTarget struct {
	client kubernetes.Interface
	// seen is the target's object per lease as last read or written,
	// without managedFields (an update without them keeps the server's).
	seen lastSeen[*coordinationv1.Lease]
}

// NewAPITarget returns a target that writes leases through client.
func NewAPITarget(client kubernetes.Interface) Target { return &apiTarget{client: client} }

func (t *apiTarget) Put(ctx context.Context, src *coordinationv1.Lease) (Outcome, error) {
	leases := t.client.CoordinationV1().Leases(src.Namespace)
	key := src.Namespace + "/" + src.Name
	cur, known := t.seen.get(key)
	for range casAttempts {
		if !known {
			got, err := leases.Get(ctx, src.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				created, err := t.create(ctx, src)
				if apierrors.IsAlreadyExists(err) {
					continue // created meanwhile: compare with that one
				}
				if err != nil {
					return 0, err
				}
				t.remember(key, created)
				return Created, nil
			}
			if err != nil {
				t.seen.forget(key)
				return 0, kubectlError("reading the target's lease", err)
			}
			cur, known = got, true
		}
		if sameContent(cur, src) {
			t.remember(key, cur)
			return Unchanged, nil
		}
		if targetNewer(cur, src) {
			t.remember(key, cur)
			return TargetNewer, nil
		}
		// The update carries cur's resourceVersion: a write since cur was
		// read (or written) is a 409, and the next round reads and
		// compares again; a 404 means it was deleted, and the next round
		// creates it.
		updated, err := leases.Update(ctx, withContent(cur, src), metav1.UpdateOptions{FieldManager: FieldManager})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			known = false
			continue
		}
		if err != nil {
			t.seen.forget(key)
			return 0, kubectlError("updating the target's lease", err)
		}
		t.remember(key, updated)
		return Updated, nil
	}
	t.seen.forget(key)
	return 0, errConflictsPersist
}

// remember keeps l, the target's current object, for the next Put.
func (t *apiTarget) remember(key string, l *coordinationv1.Lease) {
	l = l.DeepCopy()
	l.ManagedFields = nil
	t.seen.put(key, l)
}

// create creates src's copy. A namespace the target does not have is
// created first (a standalone Leasehold has only the system namespaces);
// a target that cannot create namespaces (Leasehold behind a cluster takes
// them from the cluster) reports the lease's own error.
func (t *apiTarget) create(ctx context.Context, src *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	fresh := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: src.Name, Namespace: src.Namespace}}
	leases := t.client.CoordinationV1().Leases(src.Namespace)
	opts := metav1.CreateOptions{FieldManager: FieldManager}
	created, err := leases.Create(ctx, withContent(fresh, src), opts)
	if isNamespaceNotFound(err) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: src.Namespace}}
		if _, nsErr := t.client.CoreV1().Namespaces().Create(ctx, ns, opts); nsErr == nil || apierrors.IsAlreadyExists(nsErr) {
			created, err = leases.Create(ctx, withContent(fresh, src), opts)
		}
	}
	if err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, err
		}
		return nil, kubectlError("creating the target's lease", err)
	}
	return created, nil
}

// isNamespaceNotFound reports whether err is the 404 of a create into a
// namespace that does not exist.
func isNamespaceNotFound(err error) bool {
	var st apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &st) {
		return false
	}
	d := st.Status().Details
	return d != nil && d.Kind == "namespaces"
}

func (t *apiTarget) Delete(ctx context.Context, namespace, name string) (Outcome, error) {
	t.seen.forget(namespace + "/" + name)
	err := t.client.CoordinationV1().Leases(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return Unchanged, nil
	case err != nil:
		return 0, kubectlError("deleting the target's lease", err)
	}
	return Deleted, nil
}

func (t *apiTarget) Close() error { return nil }
