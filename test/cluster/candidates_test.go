package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/leasehold/leasehold/internal/testdeps/kubecluster"
)

// TestLeaseCandidatesBehindACluster: where the cluster enables
// coordination.k8s.io/v1beta1 (LeaseCandidates, for coordinated leader
// election), its APIService can send it to Leasehold too, next to v1.
func TestLeaseCandidatesBehindACluster(t *testing.T) {
	b := startBehindWith(t, kubecluster.Options{APIServerFlags: []string{
		"--runtime-config=coordination.k8s.io/v1beta1=true",
		"--feature-gates=CoordinatedLeaderElection=true",
	}})
	b.kc.RouteGroupVersion(t, kubecluster.RouteOptions{Port: b.port, CABundle: b.caPEM, Version: "v1beta1"})
	ctx := context.Background()
	now := metav1.NewMicroTime(time.Now())
	cand := &coordinationv1beta1.LeaseCandidate{
		ObjectMeta: metav1.ObjectMeta{Name: "scheduler-a"},
		Spec: coordinationv1beta1.LeaseCandidateSpec{
			LeaseName: "kube-scheduler", RenewTime: &now, PingTime: &now,
			BinaryVersion: "1.33.0", EmulationVersion: "1.33.0", Strategy: coordinationv1.OldestEmulationVersion,
		},
	}
	if _, err := b.viaCluster.CoordinationV1beta1().LeaseCandidates("default").Create(ctx, cand, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create a LeaseCandidate through kube-apiserver: %v", err)
	}
	got, err := b.direct.CoordinationV1beta1().LeaseCandidates("default").Get(ctx, "scheduler-a", metav1.GetOptions{})
	if err != nil || got.Spec.LeaseName != "kube-scheduler" {
		t.Fatalf("the LeaseCandidate in Leasehold: %+v, %v", got, err)
	}
	for _, v := range kubecluster.KubectlVersions(t)[len(kubecluster.KubectlVersions(t))-1:] {
		out, err := b.kc.Kubectl(t, v, "get", "leasecandidates", "-n", "default")
		if err != nil || !strings.Contains(out, "scheduler-a") {
			t.Errorf("kubectl %s get leasecandidates: %v\n%s", v, err, out)
		}
	}
	if raw := etcdGet(t, b.kc, "/registry/leasecandidates/default/scheduler-a"); raw != "" {
		t.Errorf("the LeaseCandidate is in the cluster's etcd too")
	}
}
