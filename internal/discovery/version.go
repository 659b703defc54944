package discovery

import (
	"runtime"
	"runtime/debug"

	"k8s.io/apimachinery/pkg/version"
)

// Kubernetes release whose API surface Leasehold serves. 1.33 is the first
// release that serves coordination.k8s.io/v1beta1 again (for
// LeaseCandidates), which Leasehold serves too.
const (
	kubeMajor = "1"
	kubeMinor = "33"
	// GitVersion is what /version reports. It must look like a Kubernetes
	// release: kubectl compares its own minor version with the server's and
	// prints "WARNING: version difference between client (1.X) and server
	// (1.Y) exceeds the supported minor version skew of +/-1" when they are
	// more than one minor apart, and client-go users (controllers, operators)
	// gate behaviour on the server's minor version. An invented version
	// ("v0.1.0") would trigger the warning for every kubectl and mislead
	// those gates; claiming the release whose API we match keeps both honest.
	// The "-leasehold" suffix is a semver pre-release tag that tells humans
	// which server answered without breaking version parsers.
	GitVersion = "v" + kubeMajor + "." + kubeMinor + ".0-leasehold"
)

// DefaultVersionInfo describes this binary as a Kubernetes 1.33 API server.
// The commit, tree state and build date come from the Go build information
// when the binary was built from a VCS checkout.
func DefaultVersionInfo() version.Info {
	info := version.Info{
		Major:          kubeMajor,
		Minor:          kubeMinor,
		EmulationMajor: kubeMajor,
		EmulationMinor: kubeMinor,
		// kube-apiserver 1.33 reports the previous minor as the oldest
		// version it stays compatible with.
		MinCompatibilityMajor: kubeMajor,
		MinCompatibilityMinor: "32",
		GitVersion:            GitVersion,
		GitTreeState:          "clean",
		BuildDate:             "1970-01-01T00:00:00Z",
		GoVersion:             runtime.Version(),
		Compiler:              runtime.Compiler,
		Platform:              runtime.GOOS + "/" + runtime.GOARCH,
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.GitCommit = s.Value
			case "vcs.time":
				info.BuildDate = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					info.GitTreeState = "dirty"
				}
			}
		}
	}
	return info
}
