package etcd

import (
	"fmt"
	"strings"
)

// ownRoot is the root every Leasehold key starts with; Config.Prefix takes
// its place in etcd.
const ownRoot = "/registry"

// keyMap translates between Leasehold keys and etcd keys.
type keyMap struct {
	prefix string // Config.Prefix without a trailing slash
}

// toEtcd maps a key (or a key prefix) to its etcd key.
func (m keyMap) toEtcd(key string) (string, error) {
	if !strings.HasPrefix(key, ownRoot) {
		return "", fmt.Errorf("etcd: key %q is outside %s", key, ownRoot)
	}
	if m.prefix == ownRoot {
		return key, nil // stored verbatim: no copy
	}
	return m.prefix + key[len(ownRoot):], nil
}

// fromEtcd maps an etcd key read under the prefix back to its Leasehold key.
func (m keyMap) fromEtcd(key []byte) string {
	return ownRoot + string(key[len(m.prefix):])
}
