package pod_test

import (
	"context"
	"testing"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/server/servertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestNodePodsSelector is the query kubectl describe node sends.
func TestNodePodsSelector(t *testing.T) {
	srv := servertest.Start(t)
	ctx := context.Background()
	pods := srv.Client.CoreV1().Pods("default")
	for _, p := range []struct{ name, node string }{{"a", "n1"}, {"b", "n2"}} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.name}, Spec: corev1.PodSpec{NodeName: p.node,
			Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := srv.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{
		FieldSelector: "spec.nodeName=n1,status.phase!=Succeeded,status.phase!=Failed"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "a" {
		t.Fatalf("pods on n1: %+v", list.Items)
	}
}
