// Package namespaces holds the namespace controllers. Ensure and Run keep
// the system namespaces (default, kube-system, kube-public,
// kube-node-lease) in existence, as kube-apiserver's system-namespaces
// controller does: once at start, then every minute, so a deleted one comes
// back. Controller (controller.go) is kube-controller-manager's namespace
// controller: it empties every terminating namespace of its content and
// then removes its "kubernetes" finalizer, which lets it go.
//
// Invariants: Controller works only through its client (the loopback
// client, under its own identity), so its deletions take the request path
// any client's do (authorization, admission, finalizers, the garbage
// collector); a namespace is finalized only after a consistent list showed
// every namespaced resource empty in it; the status conditions it writes
// are upstream's five deletion conditions with upstream's reasons and
// messages; every goroutine it starts ends before Run returns.
package namespaces

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Interval is how often the namespaces are re-checked (kube-apiserver: 1 minute).
const Interval = time.Minute

// Ensure creates every missing namespace in names.
func Ensure(ctx context.Context, client kubernetes.Interface, names []string) error {
	for _, name := range names {
		if _, err := client.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{}); err == nil {
			continue
		} else if !apierrors.IsNotFound(err) {
			return fmt.Errorf("checking namespace %s: %w", name, err)
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", name, err)
		}
	}
	return nil
}

// Run re-ensures names every interval until ctx ends.
func Run(ctx context.Context, client kubernetes.Interface, names []string, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := Ensure(ctx, client, names); err != nil && ctx.Err() == nil {
				log.Error("ensuring system namespaces", "err", err)
			}
		}
	}
}
