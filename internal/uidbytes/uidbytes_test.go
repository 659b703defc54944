package uidbytes

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
	uuidutil "k8s.io/apimachinery/pkg/util/uuid"
)

// Only a canonical UUID is held as bytes, and it comes back as written;
// anything else (another spelling of the same UUID included) is not one.
func TestParse(t *testing.T) {
	for range 100 {
		uid := uuidutil.NewUUID()
		b, ok := Parse(uid)
		if !ok || Format(&b) != uid {
			t.Fatalf("Parse(%s) = %x, %v; formatted back %s", uid, b, ok, Format(&b))
		}
	}
	for _, uid := range []types.UID{
		"00000000-0000-0000-0000-000000000000",
		"ffffffff-ffff-ffff-ffff-ffffffffffff",
		"0123abcd-4567-89ef-0a1b-2c3d4e5f6789",
	} {
		if b, ok := Parse(uid); !ok || Format(&b) != uid {
			t.Errorf("Parse(%s) = %x, %v", uid, b, ok)
		}
	}
	for _, uid := range []types.UID{
		"",
		"uid-n1-1",
		"0123ABCD-4567-89ef-0a1b-2c3d4e5f6789",   // upper case
		"{0123abcd-4567-89ef-0a1b-2c3d4e5f6789}", // braces
		"0123abcd456789ef0a1b2c3d4e5f6789",       // no dashes
		"0123abcd-4567-89ef-0a1b-2c3d4e5f678",    // short
		"0123abcd-4567-89ef-0a1b-2c3d4e5f67890",  // long
		"0123abcd-4567-89ef-0a1b_2c3d4e5f6789",   // not a dash
		"0123abcd-4567-89eg-0a1b-2c3d4e5f6789",   // not hex
		"0123abc-d4567-89ef-0a1b-2c3d4e5f6789",   // dash misplaced
	} {
		if b, ok := Parse(uid); ok {
			t.Errorf("Parse(%q) = %x, want not a UUID", uid, b)
		}
	}
}

// Is agrees with Format for the UUID and refuses every other spelling.
func TestIs(t *testing.T) {
	for range 100 {
		uid := uuidutil.NewUUID()
		b, _ := Parse(uid)
		if !Is(&b, uid) {
			t.Fatalf("Is(%x, %s) = false", b, uid)
		}
		other := uuidutil.NewUUID()
		if Is(&b, other) || Is(&b, uid[:35]) || Is(&b, types.UID(string(uid)+"0")) {
			t.Fatalf("Is(%x) accepts another uid", b)
		}
	}
}
