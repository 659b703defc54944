package election

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func cand(name, lease, binary, emulation string, created time.Time, renewed time.Time) *coordinationv1beta1.LeaseCandidate {
	return &coordinationv1beta1.LeaseCandidate{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)},
		Spec: coordinationv1beta1.LeaseCandidateSpec{
			LeaseName: lease, BinaryVersion: binary, EmulationVersion: emulation,
			Strategy:  coordinationv1.OldestEmulationVersion,
			RenewTime: &metav1.MicroTime{Time: renewed},
		},
	}
}

func TestPickOldestEmulationVersion(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		cands []*coordinationv1beta1.LeaseCandidate
		want  string
	}{
		{"lowest emulation version wins", []*coordinationv1beta1.LeaseCandidate{
			cand("a", "l", "1.33.0", "1.33.0", t0, t0),
			cand("b", "l", "1.33.0", "1.31.0", t0, t0),
			cand("c", "l", "1.33.0", "1.32.0", t0, t0),
		}, "b"},
		{"versions compare numerically, not as strings", []*coordinationv1beta1.LeaseCandidate{
			cand("a", "l", "1.10.0", "1.10.0", t0, t0),
			cand("b", "l", "1.9.0", "1.9.0", t0, t0),
		}, "b"},
		{"equal emulation: lowest binary version", []*coordinationv1beta1.LeaseCandidate{
			cand("a", "l", "1.33.0", "1.32.0", t0, t0),
			cand("b", "l", "1.32.0", "1.32.0", t0, t0),
		}, "b"},
		{"equal versions: oldest candidate", []*coordinationv1beta1.LeaseCandidate{
			cand("a", "l", "1.33.0", "1.32.0", t0.Add(time.Second), t0),
			cand("b", "l", "1.33.0", "1.32.0", t0, t0),
		}, "b"},
		{"all equal: smallest name", []*coordinationv1beta1.LeaseCandidate{
			cand("b", "l", "1.33.0", "1.32.0", t0, t0),
			cand("a", "l", "1.33.0", "1.32.0", t0, t0),
		}, "a"},
		{"unparsable versions are skipped", []*coordinationv1beta1.LeaseCandidate{
			cand("a", "l", "1.33.0", "bogus", t0, t0),
			cand("b", "l", "1.33.0", "1.33.0", t0, t0),
		}, "b"},
		{"none valid", []*coordinationv1beta1.LeaseCandidate{
			cand("a", "l", "x", "1.30.0", t0, t0),
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := pickOldestEmulationVersion(tc.cands)
			name := ""
			if got != nil {
				name = got.Name
			}
			if name != tc.want {
				t.Errorf("picked %q, want %q", name, tc.want)
			}
		})
	}
}

func TestPickStrategy(t *testing.T) {
	t0 := time.Now()
	old := cand("old", "l", "1.31.0", "1.31.0", t0, t0)
	newer := cand("new", "l", "1.33.0", "1.31.0", t0, t0)
	newer.Spec.Strategy = "example.com/Custom"
	if s, err := pickStrategy([]*coordinationv1beta1.LeaseCandidate{old, newer}); err != nil || s != "example.com/Custom" {
		t.Errorf("got %q, %v; want the newest binary's strategy", s, err)
	}
	same := cand("same", "l", "1.33.0", "1.31.0", t0, t0)
	if _, err := pickStrategy([]*coordinationv1beta1.LeaseCandidate{newer, same}); err == nil {
		t.Error("candidates of one binary version with different strategies: want an error")
	}
	if _, err := pickStrategy(nil); err == nil {
		t.Error("no candidates: want an error")
	}
}

func TestAdmissible(t *testing.T) {
	now := time.Now()
	cs := []*coordinationv1beta1.LeaseCandidate{
		cand("fresh", "l", "1.33.0", "1.33.0", now, now.Add(-time.Minute)),
		cand("stale", "l", "1.33.0", "1.33.0", now, now.Add(-31*time.Minute)),
		cand("other", "m", "1.33.0", "1.33.0", now, now),
		{ObjectMeta: metav1.ObjectMeta{Name: "never-renewed"}, Spec: coordinationv1beta1.LeaseCandidateSpec{LeaseName: "l"}},
	}
	got := admissible(cs, "l", now, 30*time.Minute)
	if len(got) != 1 || got[0].Name != "fresh" {
		t.Errorf("admissible = %v, want only fresh", got)
	}
}

func TestExpiredAndUntilExpiry(t *testing.T) {
	now := time.Now()
	d := int32(5)
	l := &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: &d, RenewTime: &metav1.MicroTime{Time: now.Add(-4 * time.Second)}}}
	if expired(l, now) {
		t.Error("renewed 4s ago with 5s duration: not expired")
	}
	if !expired(l, now.Add(2*time.Second)) {
		t.Error("renewed 6s ago with 5s duration: expired")
	}
	if !expired(&coordinationv1.Lease{}, now) {
		t.Error("no renewTime: expired")
	}
	c := &Controller{cfg: Config{}.withDefaults()}
	if got := c.untilExpiry(l, now); got < time.Second-50*time.Millisecond || got > time.Second+50*time.Millisecond {
		t.Errorf("untilExpiry = %v, want about 1s (expiry comes before the 5s requeue)", got)
	}
}
