package noderestriction

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/leasehold/leasehold/internal/admission"
)

// admitNode confines a node to its own Node, and to the parts of it a
// kubelet owns: a node that could set a config source, its taints or
// restricted labels could steer workloads (or its own view of the cluster)
// to itself.
func admitNode(nodeName string, a *admission.Attributes) error {
	if requested := objectName(a); requested != nodeName {
		return forbidden(a, fmt.Errorf("node %q is not allowed to modify node %q", nodeName, requested))
	}
	switch a.Operation {
	case admission.Create:
		n, ok := a.Object.(*corev1.Node)
		if !ok {
			return forbidden(a, fmt.Errorf("unexpected type %T", a.Object))
		}
		// ConfigSource is deprecated (dynamic kubelet config is gone), but a
		// node setting it must still be refused, as Kubernetes does.
		//lint:ignore SA1019 the field still exists on the wire
		if n.Spec.ConfigSource != nil {
			// Kubernetes' text says "pods"; it is matched as it is.
			return forbidden(a, fmt.Errorf("node %q is not allowed to create pods with a non-nil configSource", nodeName))
		}
		if bad := forbiddenLabels(n.Labels, nil); len(bad) > 0 {
			return forbidden(a, fmt.Errorf("node %q is not allowed to set the following labels: %s", nodeName, strings.Join(bad, ", ")))
		}
	case admission.Update:
		n, ok := a.Object.(*corev1.Node)
		if !ok {
			return forbidden(a, fmt.Errorf("unexpected type %T", a.Object))
		}
		old, ok := a.OldObject.(*corev1.Node)
		if !ok {
			return forbidden(a, fmt.Errorf("unexpected type %T", a.OldObject))
		}
		// Only a new non-nil source is refused: old kubelets drop the
		// field when they write status.
		//lint:ignore SA1019 the field still exists on the wire
		if n.Spec.ConfigSource != nil && !apiequality.Semantic.DeepEqual(n.Spec.ConfigSource, old.Spec.ConfigSource) {
			return forbidden(a, fmt.Errorf("node %q is not allowed to update configSource to a new non-nil configSource", nodeName))
		}
		if !apiequality.Semantic.DeepEqual(n.Spec.Taints, old.Spec.Taints) {
			return forbidden(a, fmt.Errorf("node %q is not allowed to modify taints", nodeName))
		}
		if bad := forbiddenLabels(n.Labels, old.Labels); len(bad) > 0 {
			// Kubernetes' text has no subject here; it is matched as it is.
			return forbidden(a, fmt.Errorf("is not allowed to modify labels: %s", strings.Join(bad, ", ")))
		}
	}
	return nil
}
