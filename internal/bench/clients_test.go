package bench

import (
	"context"
	"net"
	"net/http"
	"testing"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/rest"
)

// TestNoHeaderIndexingReachesClientGosTransport builds an HTTP client the
// way Clients does and checks that the *http.Transport under client-go's
// wrappers encodes with the one-byte HPACK table: client-go hands
// WrapTransport a wrapper, not the transport itself.
func TestNoHeaderIndexingReachesClientGosTransport(t *testing.T) {
	d := &net.Dialer{}
	cfg := &rest.Config{
		Host:            "https://127.0.0.1:1",
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		Dial:            func(ctx context.Context, n, a string) (net.Conn, error) { return d.DialContext(ctx, n, a) },
		WrapTransport:   noHeaderIndexing,
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rt := hc.Transport
	for {
		if tr, ok := rt.(*http.Transport); ok {
			if tr.HTTP2 == nil || tr.HTTP2.MaxEncoderHeaderTableSize != encoderHeaderTable {
				t.Fatalf("transport HTTP2 config %+v, want MaxEncoderHeaderTableSize %d", tr.HTTP2, encoderHeaderTable)
			}
			return
		}
		w, ok := rt.(utilnet.RoundTripperWrapper)
		if !ok {
			t.Fatalf("no *http.Transport under %T", rt)
		}
		rt = w.WrappedRoundTripper()
	}
}
