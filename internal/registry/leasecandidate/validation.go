package leasecandidate

import (
	"strings"
	"unicode"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/leasehold/leasehold/internal/registry/lease"
)

// ValidateSpec checks a LeaseCandidateSpec as kube-apiserver's
// ValidateLeaseCandidateSpec does: leaseName, binaryVersion and strategy are
// required, the versions are semantic versions with binaryVersion >=
// emulationVersion, and OldestEmulationVersion needs an emulationVersion.
func ValidateSpec(spec *coordinationv1beta1.LeaseCandidateSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.LeaseName == "" {
		errs = append(errs, field.Required(fldPath.Child("leaseName"), ""))
	}
	var ev, bv *version.Version
	if spec.EmulationVersion != "" {
		if ev = parseSemver(spec.EmulationVersion); ev == nil {
			errs = append(errs, field.Invalid(fldPath.Child("emulationVersion"), spec.EmulationVersion, "must be a valid semantic version"))
		}
	}
	if spec.BinaryVersion == "" {
		errs = append(errs, field.Required(fldPath.Child("binaryVersion"), ""))
	} else if bv = parseSemver(spec.BinaryVersion); bv == nil {
		errs = append(errs, field.Invalid(fldPath.Child("binaryVersion"), spec.BinaryVersion, "must be a valid semantic version"))
	}
	// Upstream compares even when one side failed to parse (as 0.0.0).
	if spec.BinaryVersion != "" && spec.EmulationVersion != "" && orZero(bv).LessThan(orZero(ev)) {
		errs = append(errs, field.Invalid(fldPath.Child("binaryVersion"), spec.BinaryVersion, "must be greater than or equal to `emulationVersion`"))
	}
	if spec.Strategy == "" {
		errs = append(errs, field.Required(fldPath.Child("strategy"), ""))
		return errs
	}
	if spec.Strategy == coordinationv1.OldestEmulationVersion && isZero(ev) {
		errs = append(errs, field.Required(fldPath.Child("emulationVersion"), "must be specified when `strategy` is 'OldestEmulationVersion'"))
	}
	// Same rule (and path quirk, spec.strategy.strategy) as a Lease's strategy.
	return append(errs, lease.ValidateStrategy(spec.Strategy, fldPath.Child("strategy"))...)
}

// ValidateSpecUpdate is ValidateSpec plus leaseName's immutability.
func ValidateSpecUpdate(spec, old *coordinationv1beta1.LeaseCandidateSpec) field.ErrorList {
	p := field.NewPath("spec")
	errs := ValidateSpec(spec, p)
	return append(errs, apivalidation.ValidateImmutableField(spec.LeaseName, old.LeaseName, p.Child("leaseName"))...)
}

// orZero stands in 0.0.0 for a missing or unparsable version, as upstream's
// zero semver.Version does.
func orZero(v *version.Version) *version.Version {
	if v == nil {
		return version.MustParseSemantic("0.0.0")
	}
	return v
}

// isZero tells whether v is (or stands for) 0.0.0 without a pre-release.
func isZero(v *version.Version) bool {
	return v == nil || (v.Major() == 0 && v.Minor() == 0 && v.Patch() == 0 && v.PreRelease() == "")
}

// parseSemver parses a strict semantic version (MAJOR.MINOR.PATCH with
// optional pre-release and build), as the blang/semver parser kube-apiserver
// uses: apimachinery's parser also takes a leading "v" and surrounding
// spaces, which are refused here first. It returns nil when invalid.
func parseSemver(s string) *version.Version {
	if strings.HasPrefix(s, "v") || strings.IndexFunc(s, unicode.IsSpace) >= 0 {
		return nil
	}
	v, err := version.ParseSemantic(s)
	if err != nil {
		return nil
	}
	return v
}
