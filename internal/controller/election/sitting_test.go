package election

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func heldLease(holderName string, renewed time.Time, seconds int32) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "l"},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(holderName),
			RenewTime:            &metav1.MicroTime{Time: renewed},
			LeaseDurationSeconds: ptr.To(seconds),
		},
	}
}

func names(cs []*coordinationv1beta1.LeaseCandidate) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

// The case: a v1.32 holder that was slow to answer the latest ping
// must still be chosen over a v1.33 candidate that answered, so the
// controller never asks it to hand over.
func TestSittingHolderCountsWithoutAnsweringThePing(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	old := cand("kcm-132", "l", "1.32.0", "1.32.0", now.Add(-time.Hour), now.Add(-20*time.Minute))
	newer := cand("kcm-133", "l", "1.33.0", "1.33.0", now.Add(-time.Minute), now.Add(-time.Second))
	cands := []*coordinationv1beta1.LeaseCandidate{old, newer}
	acked := []*coordinationv1beta1.LeaseCandidate{newer} // old missed the ping

	live := heldLease("kcm-132", now.Add(-2*time.Second), 5)
	got := withSittingHolder(acked, cands, live, now)
	if len(got) != 2 {
		t.Fatalf("withSittingHolder(live lease held by kcm-132) = %v, want both candidates", names(got))
	}
	if e := pickOldestEmulationVersion(got); e == nil || e.Name != "kcm-132" {
		t.Fatalf("electee %v, want the sitting v1.32 holder kcm-132", e)
	}

	// An expired Lease's holder proves nothing: only those who answered.
	dead := heldLease("kcm-132", now.Add(-10*time.Second), 5)
	if got := withSittingHolder(acked, cands, dead, now); len(got) != 1 || got[0].Name != "kcm-133" {
		t.Fatalf("withSittingHolder(expired lease) = %v, want [kcm-133]", names(got))
	}
	// A holder that is not a candidate is not invented; one already among
	// the answers is not added twice; no Lease, nothing to add.
	if got := withSittingHolder(acked, cands, heldLease("someone-else", now, 5), now); len(got) != 1 {
		t.Fatalf("withSittingHolder(non-candidate holder) = %v, want [kcm-133]", names(got))
	}
	both := []*coordinationv1beta1.LeaseCandidate{old, newer}
	if got := withSittingHolder(both, cands, live, now); len(got) != 2 {
		t.Fatalf("withSittingHolder(holder already answered) = %v, want 2 candidates", names(got))
	}
	if got := withSittingHolder(acked, cands, nil, now); len(got) != 1 {
		t.Fatalf("withSittingHolder(no lease) = %v, want [kcm-133]", names(got))
	}
}

// Under OldestEmulationVersion a candidate with a newer emulation version
// never displaces a live holder with an older one, whichever of the
// candidates answered the ping.
func TestNewerEmulationNeverDisplacesOlderHolder(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	versions := []string{"1.31.0", "1.32.0", "1.33.0"}
	var cands []*coordinationv1beta1.LeaseCandidate
	for i, v := range versions {
		cands = append(cands, cand("c"+v, "l", v, v, now.Add(-time.Duration(i+1)*time.Minute), now))
	}
	for _, h := range cands {
		lease := heldLease(h.Name, now.Add(-time.Second), 5)
		// Every subset of the candidates may have answered.
		for mask := range 1 << len(cands) {
			var acked []*coordinationv1beta1.LeaseCandidate
			for i, c := range cands {
				if mask&(1<<i) != 0 {
					acked = append(acked, c)
				}
			}
			e := pickOldestEmulationVersion(withSittingHolder(acked, cands, lease, now))
			if e == nil {
				t.Fatalf("holder %s, answered %v: no electee", h.Name, names(acked))
			}
			if compareVersions(e.Spec.EmulationVersion, h.Spec.EmulationVersion) > 0 {
				t.Errorf("holder %s (emulation %s), answered %v: electee %s has a newer emulation version %s",
					h.Name, h.Spec.EmulationVersion, names(acked), e.Name, e.Spec.EmulationVersion)
			}
		}
	}
}
