package audit

import (
	"net/http/httptest"
	"testing"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// discard is a Sink that drops events: the benchmarks measure building
// them, not writing them (logbackend's benchmarks do that).
type discard struct{}

func (discard) ProcessEvents(...*auditv1.Event) bool { return true }

func benchmarkRenewal(b *testing.B, policy *Policy) {
	a := New(Config{Policy: policy, Sink: discard{}})
	r := httptest.NewRequest("PUT", leaseURI+"?timeout=10s", nil)
	r.RemoteAddr = "10.0.0.1:5555"
	r.Header.Set("User-Agent", "leasehold-agent/v0")
	b.ReportAllocs()
	for b.Loop() {
		rec := leaseRecord("update")
		rec.Received = time.Now()
		q := a.Begin(r, &rec)
		rec.Decision, rec.Code = "allow", 200
		q.End(&rec)
	}
}

// BenchmarkRenewalMetadata is the audit cost of one renewal under a policy
// that logs everything at Metadata (two events: RequestReceived and
// ResponseComplete).
func BenchmarkRenewalMetadata(b *testing.B) {
	p, _, err := ParsePolicy([]byte(policyHeader + "rules:\n- level: Metadata\n"))
	if err != nil {
		b.Fatal(err)
	}
	benchmarkRenewal(b, p)
}

// BenchmarkRenewalDefaultPolicy is the audit cost of one renewal under the
// default policy, which leaves renewals out: one policy evaluation.
func BenchmarkRenewalDefaultPolicy(b *testing.B) {
	p, err := DefaultPolicy()
	if err != nil {
		b.Fatal(err)
	}
	benchmarkRenewal(b, p)
}
