package servertest

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// WantInvalid fails the test unless err is a 422 Invalid whose message
// contains every one of parts.
func WantInvalid(t testing.TB, err error, parts ...string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("want 422 Invalid, got %v", err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q lacks %q", err.Error(), p)
		}
	}
}
