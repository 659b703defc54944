package registry

import (
	"time"

	"google.golang.org/protobuf/encoding/protowire"
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
	// WirePath is where the renewal time is in the resource's protobuf
	// encoding: a field number in each nested message, outermost first (a
	// lease's spec.renewTime is 2, 4). With FromWire it lets the object
	// layer recognize a protobuf update that changes nothing else without
	// decoding it (objects.Store.RenewalFromWire). Both or neither.
	WirePath []protowire.Number
	// FromWire returns a copy of cur whose top-level struct is its own and
	// shares everything else with cur, with the renewal time decoded from
	// value (its encoding at WirePath) exactly as decoding the whole object
	// would. value belongs to the caller: FromWire copies what it keeps.
	FromWire func(cur runtime.Object, value []byte) (runtime.Object, error)
}
