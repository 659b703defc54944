// Package uidbytes holds an object uid that is a canonical UUID as its 16
// bytes instead of its 36-character string.
//
// Why: the in-process controllers remember every object of a fleet by uid.
// A uid string is a 48-byte allocation, usually a fresh one from each
// decode of an object the watch cache keeps compressed, which the
// controller would then keep alive; 16 bytes held inline cost neither the
// allocation nor a pointer for the Go collector to follow.
//
// Invariant: only the canonical form (8-4-4-4-12 lower-case hex digits) is
// parsed, so Format gives back the very string that was parsed, and two
// uids with the same bytes are the same string. Any other uid (a client may
// write one in a reference) is not a UUID here: callers keep it as written.
package uidbytes

import (
	"encoding/binary"

	"k8s.io/apimachinery/pkg/types"
)

// Parse reads uid as a UUID in its canonical form, and only that form.
func Parse(uid types.UID) (b [16]byte, ok bool) {
	if len(uid) != 36 {
		return b, false
	}
	j := 0
	for i := 0; i < 36; {
		switch i {
		case 8, 13, 18, 23:
			if uid[i] != '-' {
				return b, false
			}
			i++
			continue
		}
		hi, ok1 := hexDigit(uid[i])
		lo, ok2 := hexDigit(uid[i+1])
		if !ok1 || !ok2 {
			return b, false
		}
		b[j] = hi<<4 | lo
		j++
		i += 2
	}
	return b, true
}

// Is tells whether uid is the canonical form of the UUID b, without
// allocating.
func Is(b *[16]byte, uid types.UID) bool {
	if len(uid) != 36 {
		return false
	}
	var buf [36]byte
	put(&buf, b)
	return string(buf[:]) == string(uid)
}

// Format returns the canonical form of the UUID b, the inverse of Parse.
func Format(b *[16]byte) types.UID {
	var buf [36]byte
	put(&buf, b)
	return types.UID(buf[:])
}

func put(buf *[36]byte, b *[16]byte) {
	be := binary.BigEndian
	be.PutUint64(buf[0:8], hex8(be.Uint32(b[0:4])))
	h := hex8(be.Uint32(b[4:8]))
	be.PutUint32(buf[9:13], uint32(h>>32))
	be.PutUint32(buf[14:18], uint32(h))
	h = hex8(be.Uint32(b[8:12]))
	be.PutUint32(buf[19:23], uint32(h>>32))
	be.PutUint32(buf[24:28], uint32(h))
	be.PutUint64(buf[28:36], hex8(be.Uint32(b[12:16])))
	buf[8], buf[13], buf[18], buf[23] = '-', '-', '-', '-'
}

// hex8 returns the 8 lower-case hex digits of x, the first in the highest
// byte: each nibble is spread into a byte of its own, and the bytes are
// turned into digits all at once. Is is on a lease renewal's path (the
// garbage collector's check that a lease's owner is unchanged), and took
// 50-60 ns with a table and a loop, 20-30 ns so (hot caches).
func hex8(x uint32) uint64 {
	v := uint64(x)
	v = (v | v<<16) & 0x0000ffff0000ffff
	v = (v | v<<8) & 0x00ff00ff00ff00ff
	v = (v | v<<4) & 0x0f0f0f0f0f0f0f0f
	letters := (v + 0x0606060606060606) >> 4 & 0x0101010101010101 // 1 in each byte ≥ 10
	return v + 0x3030303030303030 + letters*('a'-'0'-10)
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}
