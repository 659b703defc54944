package objects

import (
	"testing"
	"time"
)

func TestSecondStampsShareOneStampPerSecond(t *testing.T) {
	var s secondStamps
	zone := time.FixedZone("UTC+2", 2*3600)
	base := time.Date(2026, 11, 25, 6, 30, 15, 0, zone)

	first := s.at(base.Add(100 * time.Millisecond))
	if want := base.UTC(); !first.Time.Equal(want) || first.Location() != time.UTC {
		t.Fatalf("stamp = %v, want %v in UTC", first.Time, want)
	}
	if again := s.at(base.Add(999 * time.Millisecond)); again != first {
		t.Fatalf("a second stamp within the same second: %p, want the shared %p", again, first)
	}
	next := s.at(base.Add(time.Second))
	if next == first || !next.Time.Equal(base.Add(time.Second)) {
		t.Fatalf("next second's stamp = %v (%p), want %v in a new stamp", next.Time, next, base.Add(time.Second))
	}
	if first.Time != base.UTC() {
		t.Fatalf("a handed-out stamp changed to %v", first.Time)
	}
	// time.Now carries a monotonic reading; a stamp must not, or equal
	// instants would compare unequal with ==, and DeepEqual, in tests.
	if now := s.at(time.Now()); now.Time != now.Time.Round(0) {
		t.Fatalf("stamp %v keeps a monotonic reading", now.Time)
	}
}
