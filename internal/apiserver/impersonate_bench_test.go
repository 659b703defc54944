package apiserver

import (
	"net/http"
	"testing"
)

// BenchmarkHasImpersonation is the impersonation stage's cost on an
// ordinary request: the headers client-go sends with a renewal.
func BenchmarkHasImpersonation(b *testing.B) {
	h := http.Header{
		"Accept":          {"application/vnd.kubernetes.protobuf, */*"},
		"Content-Type":    {"application/vnd.kubernetes.protobuf"},
		"User-Agent":      {"leasehold/v0.0.0 (linux/amd64) kubernetes/$Format"},
		"Authorization":   {"Bearer 0123456789abcdef"},
		"Accept-Encoding": {"gzip"},
		"Content-Length":  {"180"},
	}
	for b.Loop() {
		if hasImpersonation(h) {
			b.Fatal("no impersonation header")
		}
	}
}
