package apiserveridentity_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/internal/controller/apiserveridentity"
)

// The expected names were computed independently of this code, in Python:
//
//	d = struct.pack('>H', len(h)) + h.encode() + struct.pack('>H', 14) + b'kube-apiserver'
//	'apiserver-' + base64.b32encode(hashlib.sha256(d).digest()[:16]).decode().rstrip('=').lower()
//
// which is the derivation of k8s.io/apiserver's NewConfig (cryptobyte
// uint16 length prefixes, SHA-256, first 16 bytes, unpadded base32,
// lower case). Note that "node-1" and "control-plane-a" show why it is the
// first 16 bytes and not the first 26 characters of the whole hash's
// base32: their last characters differ (…zlzs6, …s4duv for the latter).
func TestLeaseNameVectors(t *testing.T) {
	for host, want := range map[string]string{
		"node-1":             "apiserver-lgabes5ywnaqeagh5dny4zlzs4",
		"control-plane-a":    "apiserver-zzfrpm53xfdcvxvim43s5s4duu",
		"kind-control-plane": "apiserver-c7uylvfxlbqccnk6myfkwetzze",
	} {
		got, err := apiserveridentity.LeaseName(host)
		if err != nil {
			t.Fatalf("LeaseName(%q): %v", host, err)
		}
		if got != want {
			t.Errorf("LeaseName(%q) = %q, want %q", host, got, want)
		}
	}
}

// Two replicas on different hosts get different, valid lease names, and a
// host keeps its name (a restarted replica takes over its lease).
func TestLeaseNamePerHost(t *testing.T) {
	shape := regexp.MustCompile(`^apiserver-[a-z2-7]{26}$`)
	a, errA := apiserveridentity.LeaseName("replica-a")
	b, errB := apiserveridentity.LeaseName("replica-b")
	again, errAgain := apiserveridentity.LeaseName("replica-a")
	if errA != nil || errB != nil || errAgain != nil {
		t.Fatalf("errors: %v %v %v", errA, errB, errAgain)
	}
	if a == b {
		t.Fatalf("two hosts share the lease name %q", a)
	}
	if a != again {
		t.Fatalf("the name of a host changed: %q then %q", a, again)
	}
	for _, n := range []string{a, b} {
		if !shape.MatchString(n) {
			t.Errorf("lease name %q does not match %s", n, shape)
		}
	}
	// A hostname too long for its uint16 length prefix is an error, not a
	// silently wrong hash input.
	if _, err := apiserveridentity.LeaseName(strings.Repeat("x", 1<<16)); err == nil {
		t.Error("a hostname longer than a uint16 length prefix was accepted")
	}
}
