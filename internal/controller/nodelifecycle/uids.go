package nodelifecycle

import "k8s.io/apimachinery/pkg/types"

// uuid is a node uid in the canonical UUID form (8-4-4-4-12 lower-case hex
// digits) held as its 16 bytes. The API server gives every node such a uid,
// and the node table keeps it this way (nodeTable.setUID): a uid string was
// a 36-byte copy per node (a 48-byte allocation), fresh from every decode of
// a cold node, which the controller then retained for as long as it
// remembered the node. Any other uid is kept as written (nodeTable.oddUIDs).
type uuid [16]byte

// parseUUID reads uid as a UUID in its canonical form, and only that form:
// formatUUID must give back the very string (a uid is compared, and sent in
// events, as written).
func parseUUID(uid types.UID) (b uuid, ok bool) {
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

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// formatUUID is the canonical form of b, the inverse of parseUUID.
func formatUUID(b uuid) types.UID {
	const digits = "0123456789abcdef"
	var out [36]byte
	j := 0
	for i, x := range b {
		switch i {
		case 4, 6, 8, 10:
			out[j] = '-'
			j++
		}
		out[j], out[j+1] = digits[x>>4], digits[x&0xf]
		j += 2
	}
	return types.UID(out[:])
}
