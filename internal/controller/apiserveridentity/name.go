package apiserveridentity

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"strings"

	"golang.org/x/crypto/cryptobyte"
)

// Labels and values kube-apiserver puts on its identity leases.
const (
	// IdentityLabel marks identity leases (kube-apiserver 1.27 and later);
	// the collector selects leases by it.
	IdentityLabel = "apiserver.kubernetes.io/identity"
	// LegacyComponentLabel is the 1.26 name of IdentityLabel, also set so
	// that `-l k8s.io/component=kube-apiserver` finds the replicas too.
	LegacyComponentLabel = "k8s.io/component"
	// Component is the value of both labels and the identity mixed into the
	// lease name's hash.
	Component = "kube-apiserver"
	// Selector selects identity leases.
	Selector = IdentityLabel + "=" + Component
)

// LeaseName is kube-apiserver's APIServerID for hostname: "apiserver-" and
// the lowercase unpadded base32 of the first 16 bytes of the SHA-256 of
// hostname and "kube-apiserver", each prefixed with its length as a
// big-endian uint16 (cryptobyte's length-prefixed encoding, which keeps
// ("ab","c") and ("a","bc") apart). 16 bytes make 26 base32 characters.
func LeaseName(hostname string) (string, error) {
	b := cryptobyte.NewBuilder(nil)
	for _, s := range []string{hostname, Component} {
		b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes([]byte(s)) })
	}
	data, err := b.Bytes()
	if err != nil {
		// Only a hostname over 65535 bytes gets here.
		return "", fmt.Errorf("encoding hostname %.64q for the identity lease name: %w", hostname, err)
	}
	sum := sha256.Sum256(data)
	enc := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:16])
	return "apiserver-" + strings.ToLower(enc), nil
}
