package election

import (
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	"k8s.io/apimachinery/pkg/util/version"
)

// admissible keeps the candidates for one Lease whose renewTime is within
// validity of now (older ones are left for the garbage collector).
func admissible(cands []*coordinationv1beta1.LeaseCandidate, leaseName string, now time.Time, validity time.Duration) []*coordinationv1beta1.LeaseCandidate {
	var out []*coordinationv1beta1.LeaseCandidate
	for _, c := range cands {
		if c.Spec.LeaseName != leaseName || c.Spec.RenewTime == nil {
			continue
		}
		if c.Spec.RenewTime.Add(validity).Before(now) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// pickStrategy is the strategy of the candidate with the highest binary
// version, as kube-apiserver decides it: the newest binary knows every
// strategy the older ones know. Candidates of that same version must agree.
func pickStrategy(cands []*coordinationv1beta1.LeaseCandidate) (coordinationv1.CoordinatedLeaseStrategy, error) {
	if len(cands) == 0 {
		return "", fmt.Errorf("no candidates")
	}
	best := cands[0]
	for _, c := range cands[1:] {
		switch compareVersions(c.Spec.BinaryVersion, best.Spec.BinaryVersion) {
		case 1:
			best = c
		case 0:
			if c.Spec.Strategy != best.Spec.Strategy {
				return "", fmt.Errorf("candidates %s and %s of binary version %s select different strategies %q and %q",
					best.Name, c.Name, c.Spec.BinaryVersion, best.Spec.Strategy, c.Spec.Strategy)
			}
		}
	}
	return best.Spec.Strategy, nil
}

// pickOldestEmulationVersion returns the candidate with the lowest
// emulation version, then the lowest binary version, then the oldest
// creation (then the smallest name, so the choice is deterministic). It
// skips candidates whose versions do not parse, and returns nil when none
// is left.
func pickOldestEmulationVersion(cands []*coordinationv1beta1.LeaseCandidate) *coordinationv1beta1.LeaseCandidate {
	var best *coordinationv1beta1.LeaseCandidate
	for _, c := range cands {
		if parseVersion(c.Spec.EmulationVersion) == nil || parseVersion(c.Spec.BinaryVersion) == nil {
			continue
		}
		if best == nil || better(c, best) {
			best = c
		}
	}
	return best
}

// better reports whether a ranks before b under OldestEmulationVersion.
func better(a, b *coordinationv1beta1.LeaseCandidate) bool {
	if r := compareVersions(a.Spec.EmulationVersion, b.Spec.EmulationVersion); r != 0 {
		return r < 0
	}
	if r := compareVersions(a.Spec.BinaryVersion, b.Spec.BinaryVersion); r != 0 {
		return r < 0
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}

// compareVersions compares two semantic versions (-1, 0, 1); one that does
// not parse counts as 0.0.0, as upstream's zero semver value.
func compareVersions(a, b string) int {
	va, vb := orZero(parseVersion(a)), orZero(parseVersion(b))
	switch {
	case va.LessThan(vb):
		return -1
	case vb.LessThan(va):
		return 1
	default:
		return 0
	}
}

func parseVersion(s string) *version.Version {
	if s == "" {
		return nil
	}
	v, err := version.ParseSemantic(s)
	if err != nil {
		return nil
	}
	return v
}

var zeroVersion = version.MajorMinor(0, 0)

func orZero(v *version.Version) *version.Version {
	if v == nil {
		return zeroVersion
	}
	return v
}
