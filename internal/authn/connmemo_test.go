package authn

import (
	"context"
	"net/http"
	"testing"
)

// onConnection returns r as a request on the connection whose context is
// conn (WithConnectionMemo's).
func onConnection(conn context.Context, r *http.Request) *http.Request {
	return r.WithContext(conn)
}

// TestConnectionMemoAnswersForItsCertificate checks that a connection's
// requests get the verdict on its certificate from the memo (the shared
// cache not even consulted), and that the memo is never taken for another
// certificate or another authenticator's verdict.
func TestConnectionMemoAnswersForItsCertificate(t *testing.T) {
	ca := newTestCA(t, "ca")
	a := NewCertAuthenticator(ca.pool(), 16)
	cert := ca.issue(t, clientTemplate("system:node:n1", "system:nodes"))
	conn := WithConnectionMemo(context.Background(), nil)
	r := onConnection(conn, certRequest(cert))
	if u, ok, err := a.AuthenticateRequest(r); !ok || err != nil || u.Name != "system:node:n1" {
		t.Fatalf("first request: %+v ok=%v err=%v", u, ok, err)
	}
	// With the shared cache emptied, a second request is answered by the
	// memo alone: the verdict is the same.
	a.cache.lru.RemoveAll(func(any) bool { return true })
	if u, ok, err := a.AuthenticateRequest(r); !ok || err != nil || u.Name != "system:node:n1" {
		t.Fatalf("second request: %+v ok=%v err=%v", u, ok, err)
	}
	if n := len(a.cache.lru.Keys()); n != 0 {
		t.Fatalf("the second request went to the shared cache (%d entries): the memo did not answer", n)
	}

	// Another certificate on the same memo (not a real connection's case,
	// a guard) is verified for itself: from an unknown CA it is refused.
	other := newTestCA(t, "other").issue(t, clientTemplate("mallory"))
	if _, ok, err := a.AuthenticateRequest(onConnection(conn, certRequest(other))); ok || err == nil {
		t.Fatalf("another certificate on the connection: ok=%v err=%v, want refused", ok, err)
	}
	// Another authenticator (roots reloaded) decides for itself too, with
	// the memo holding a's acceptance of this very certificate.
	if _, ok, err := a.AuthenticateRequest(r); !ok || err != nil {
		t.Fatalf("the connection's certificate again: ok=%v err=%v", ok, err)
	}
	b := NewCertAuthenticator(newTestCA(t, "rotated").pool(), 16)
	if _, ok, err := b.AuthenticateRequest(onConnection(conn, certRequest(cert))); ok || err == nil {
		t.Fatalf("an authenticator trusting other roots accepted the memo's certificate: ok=%v err=%v", ok, err)
	}
}
