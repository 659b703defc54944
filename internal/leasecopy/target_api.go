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
}

// NewAPITarget returns a target that writes leases through client.
func NewAPITarget(client kubernetes.Interface) Target { return &apiTarget{client: client} }

func (t *apiTarget) Put(ctx context.Context, src *coordinationv1.Lease) (Outcome, error) {
	leases := t.client.CoordinationV1().Leases(src.Namespace)
	for range casAttempts {
		cur, err := leases.Get(ctx, src.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			created, err := t.create(ctx, src)
			if apierrors.IsAlreadyExists(err) {
				continue // created meanwhile: compare with that one
			}
			return created, err
		}
		if err != nil {
			return 0, kubectlError("reading the target's lease", err)
		}
		if sameContent(cur, src) {
			return Unchanged, nil
		}
		if targetNewer(cur, src) {
			return TargetNewer, nil
		}
		// The update carries cur's resourceVersion: a write since the Get
		// is a 409, and the next round compares with it.
		_, err = leases.Update(ctx, withContent(cur, src), metav1.UpdateOptions{FieldManager: FieldManager})
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return 0, kubectlError("updating the target's lease", err)
		}
		return Updated, nil
	}
	return 0, errConflictsPersist
}

// create creates src's copy. A namespace the target does not have is
// created first (a standalone Leasehold has only the system namespaces);
// a target that cannot create namespaces (Leasehold behind a cluster takes
// them from the cluster) reports the lease's own error.
func (t *apiTarget) create(ctx context.Context, src *coordinationv1.Lease) (Outcome, error) {
	fresh := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: src.Name, Namespace: src.Namespace}}
	leases := t.client.CoordinationV1().Leases(src.Namespace)
	opts := metav1.CreateOptions{FieldManager: FieldManager}
	_, err := leases.Create(ctx, withContent(fresh, src), opts)
	if isNamespaceNotFound(err) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: src.Namespace}}
		if _, nsErr := t.client.CoreV1().Namespaces().Create(ctx, ns, opts); nsErr == nil || apierrors.IsAlreadyExists(nsErr) {
			_, err = leases.Create(ctx, withContent(fresh, src), opts)
		}
	}
	if err != nil {
		if apierrors.IsAlreadyExists(err) {
			return 0, err
		}
		return 0, kubectlError("creating the target's lease", err)
	}
	return Created, nil
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
