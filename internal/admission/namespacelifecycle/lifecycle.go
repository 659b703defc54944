// Package namespacelifecycle is the NamespaceLifecycle admission plugin of
// kube-apiserver, for Leasehold: it refuses the deletion of the system
// namespaces, any write of namespaced content in a namespace that does not
// exist (NotFound), and the creation of content in a namespace that is
// being terminated (Forbidden, with the NamespaceTerminating cause), with
// kube-apiserver's exact messages.
//
// Invariants: deletions of content are always admitted (the namespace
// controller must be able to empty a terminating namespace), so are
// cluster-scoped objects, namespaces themselves (but for deleting a
// system one) and local access reviews (whose answer must not reveal
// whether a namespace exists). A namespace is looked up in the watch cache
// first; a miss, or a namespace this plugin saw deleted in the last
// forceLiveLookupTTL that the cache still shows Active, is read again
// consistently, so a create right after a namespace's DELETE cannot slip
// through a cache that has not caught up.
package namespacelifecycle

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/leasehold/leasehold/internal/admission"
)

// Getter returns the namespace called name, or nil if there is none.
type Getter func(ctx context.Context, name string) (*corev1.Namespace, error)

// Plugin is the admission check. Build it with New.
type Plugin struct {
	cached, live Getter
	immortal     map[string]bool
	deleted      *recentDeletes
}

var _ admission.Interface = (*Plugin)(nil)

// New returns the plugin. cached reads the watch cache (possibly behind),
// live reads consistently (possibly slower); immortal are the namespaces
// that may not be deleted (namespace.System). clk may be nil (real time).
func New(cached, live Getter, immortal []string, clk clock.PassiveClock) *Plugin {
	if clk == nil {
		clk = clock.RealClock{}
	}
	p := &Plugin{cached: cached, live: live, immortal: map[string]bool{}, deleted: newRecentDeletes(clk)}
	for _, n := range immortal {
		p.immortal[n] = true
	}
	return p
}

var namespacesResource = corev1.Resource("namespaces")

// localSubjectAccessReviews give a view into permissions in a namespace:
// refusing them for a missing namespace would tell who may not know it.
var localSubjectAccessReviews = schema.GroupResource{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"}

// Admit implements admission.Interface.
func (p *Plugin) Admit(ctx context.Context, a *admission.Attributes) error {
	gr := schema.GroupResource{Group: a.APIGroup, Resource: a.Resource}
	isNamespace := gr == namespacesResource && a.Subresource == ""
	if isNamespace && a.Operation == admission.Delete && p.immortal[a.Name] {
		return apierrors.NewForbidden(namespacesResource, a.Name, errors.New("this namespace may not be deleted"))
	}
	if gr == namespacesResource {
		if isNamespace && a.Operation == admission.Delete {
			p.deleted.add(a.Name)
		}
		return nil
	}
	// Only a create can bring content into a namespace. kube-apiserver also
	// looks the namespace up for updates (an update in a missing namespace
	// is a NotFound there), but an object that exists is in a namespace
	// that exists or is terminating, where updates are allowed: the lookup
	// could only refuse an update racing the namespace's last moment. It was
	// the admission stage's cost on every lease renewal (a watch-cache read
	// that may decompress a cold namespace), so updates skip it.
	if a.Namespace == "" || a.Operation != admission.Create || gr == localSubjectAccessReviews {
		return nil
	}

	ns, err := p.cached(ctx, a.Namespace)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	forceLive := ns != nil && ns.Status.Phase == corev1.NamespaceActive && p.deleted.has(a.Namespace)
	if ns == nil || forceLive {
		if ns, err = p.live(ctx, a.Namespace); err != nil {
			return apierrors.NewInternalError(err)
		}
		if ns == nil {
			return apierrors.NewNotFound(namespacesResource, a.Namespace)
		}
	}
	if a.Operation != admission.Create || ns.Status.Phase != corev1.NamespaceTerminating {
		return nil
	}
	return terminating(a, gr)
}

// terminating is kube-apiserver's refusal of a create in a terminating
// namespace: admission.NewForbidden's name, plus the cause clients test.
func terminating(a *admission.Attributes, gr schema.GroupResource) error {
	err := apierrors.NewForbidden(gr, objectName(a), fmt.Errorf("unable to create new content in namespace %s because it is being terminated", a.Namespace))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{
		Type:    corev1.NamespaceTerminatingCause,
		Message: fmt.Sprintf("namespace %s is being terminated", a.Namespace),
		Field:   "metadata.namespace",
	})
	return err
}

// objectName is the name admission errors give: the request's, else the
// object's name or generateName, else "Unknown" (as kube-apiserver).
func objectName(a *admission.Attributes) string {
	if a.Name != "" {
		return a.Name
	}
	if a.Object == nil {
		return "Unknown"
	}
	acc, err := meta.Accessor(a.Object)
	switch {
	case err != nil:
		return "Unknown/errorGettingName"
	case acc.GetName() != "":
		return acc.GetName()
	case acc.GetGenerateName() != "":
		return acc.GetGenerateName()
	}
	return "Unknown"
}
