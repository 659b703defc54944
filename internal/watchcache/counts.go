package watchcache

import "strings"

// prefixCounts is the number of current keys under every prefix of a key
// that ends in "/" ("/registry/leases/" and "/registry/leases/ns/" for
// "/registry/leases/ns/name"). A paginated list's first page learns from it
// how many keys follow the page (remainingItemCount) without visiting
// them. It changes only when a key appears or goes, never on an update of
// an existing key, so renewals never touch it. A prefix whose count drops
// to zero is forgotten, so namespaces that come and go leave nothing behind.
// The Cache's lock guards it.
type prefixCounts map[string]int

// add adds delta to every "/"-terminated prefix of key.
func (p prefixCounts) add(key string, delta int) {
	for i := 0; i < len(key); i++ {
		if key[i] != '/' {
			continue
		}
		prefix := key[:i+1]
		n, ok := p[prefix]
		switch {
		case !ok:
			// A fresh string: the map must not keep this key's whole
			// string alive after the key itself is gone.
			p[strings.Clone(prefix)] = delta
		case n+delta == 0:
			delete(p, prefix)
		default:
			p[prefix] = n + delta
		}
	}
}

// count is the number of keys under prefix, and false when prefix does
// not end in "/" (only those prefixes are counted).
func (p prefixCounts) count(prefix string) (int, bool) {
	if !strings.HasSuffix(prefix, "/") {
		return 0, false
	}
	return p[prefix], true
}
