package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/internal/admission/namespacelifecycle"
)

// namespaceGetters are NamespaceLifecycle's two reads of the cluster's
// namespaces: cached from a watch (every write), and live (only when the
// watch does not know the namespace, or showed it deleted a moment ago,
// so that a namespace created a moment ago is not refused).
func namespaceGetters(inf coreinformers.NamespaceInformer, client kubernetes.Interface) (cached, live namespacelifecycle.Getter) {
	lister := inf.Lister()
	cached = func(_ context.Context, name string) (*corev1.Namespace, error) {
		ns, err := lister.Get(name)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return ns, err
	}
	live = func(ctx context.Context, name string) (*corev1.Namespace, error) {
		ns, err := client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading namespace %s from the cluster: %w", name, err)
		}
		return ns, nil
	}
	return cached, live
}
