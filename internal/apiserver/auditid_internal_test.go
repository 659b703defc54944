package apiserver

import (
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/internal/request"
)

func TestAuditIDKeyIsCanonical(t *testing.T) {
	if got := textproto.CanonicalMIMEHeaderKey(AuditIDHeader); got != auditIDKey {
		t.Fatalf("canonical %s is %s, not %s", AuditIDHeader, got, auditIDKey)
	}
}

// TestAssignAuditIDKeepsTheClients checks that a client's Audit-ID, however
// the header was spelled when set, is the request's and the response's.
func TestAssignAuditIDKeepsTheClients(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/api", nil)
	r.Header.Set("audit-id", "from-the-client")
	w := httptest.NewRecorder()
	var rec request.Record
	assignAuditID(w, r, &rec)
	var answered []string
	for k, v := range w.Header() {
		if strings.EqualFold(k, AuditIDHeader) {
			answered = append(answered, v...)
		}
	}
	if rec.AuditID != "from-the-client" || len(answered) != 1 || answered[0] != "from-the-client" {
		t.Fatalf("audit ID %q, response header %q", rec.AuditID, answered)
	}
}
