package registry

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

// Renewal is how a resource's renewals look: a time that moves while
// every other non-metadata field stays.
type Renewal struct {
	// Only reports whether newer's non-metadata fields equal older's, but
	// for the renewal time, set in both, and returns older's renewal time.
	Only func(older, newer runtime.Object) (time.Time, bool)
	// Set sets obj's renewal time; obj is a copy the caller owns.
	Set func(obj runtime.Object, t time.Time)
}
