package bench

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/internal/request"
)

// authorization is the Authorization header one node's requests carry, as
// the one-element slice an http.Header holds, made once per node so that
// setting it on a request allocates nothing. nil means the connection's own
// credentials (the kubeconfig's).
type authorization []string

// bearer is the authorization of a bearer token.
func bearer(token string) authorization { return authorization{"Bearer " + token} }

// authorizationKey is the context key of the authorization a typed
// clientset's request is to carry (see withAuthorization).
type authorizationKey struct{}

// withAuthorization makes requests sent with ctx over a node connection
// (NewNodeClients) carry auth. The typed clientset takes no per-request
// headers, so they travel through the context to nodeAuthRoundTripper; the
// lean client sets its headers itself.
func withAuthorization(ctx context.Context, auth authorization) context.Context {
	if auth == nil {
		return ctx
	}
	return context.WithValue(ctx, authorizationKey{}, auth)
}

// nodeAuthRoundTripper sets the Authorization header a request's context
// names (withAuthorization), unless the request has one already.
type nodeAuthRoundTripper struct{ next http.RoundTripper }

// withNodeAuthorization is the rest.Config WrapTransport of node connections.
func withNodeAuthorization(rt http.RoundTripper) http.RoundTripper {
	return nodeAuthRoundTripper{next: rt}
}

// RoundTrip implements http.RoundTripper without modifying req, as the
// interface requires: it sends a copy with the header set.
func (n nodeAuthRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	auth, ok := req.Context().Value(authorizationKey{}).(authorization)
	if !ok || req.Header["Authorization"] != nil {
		return n.next.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	r.Header["Authorization"] = auth
	return n.next.RoundTrip(r)
}

// WrappedRoundTripper implements utilnet.RoundTripperWrapper, so that
// noHeaderIndexing finds the transport underneath.
func (n nodeAuthRoundTripper) WrappedRoundTripper() http.RoundTripper { return n.next }

var _ utilnet.RoundTripperWrapper = nodeAuthRoundTripper{}

// nodeTokenWait bounds how long setup waits for the server to accept the
// node tokens: one that polls the token file (Leasehold's default is every
// second) sees a rewritten one within a few seconds.
const nodeTokenWait = 30 * time.Second

// awaitNodeToken waits until the server authenticates slot's node: a GET of
// the node's own lease, which the Node authorizer allows every node, is
// answered with anything but 401. Tokens EnsureNodeTokens has just added
// are unknown to a running server until it reads the file again, and one
// started without --token-auth-file never knows them: setup then fails
// here with a message saying so, rather than every renewal failing.
// It gives up after wait.
func awaitNodeToken(ctx context.Context, cfg Config, client kubernetes.Interface, tokens *NodeTokens, slot *leaseSlot, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		rctx, cancel := context.WithTimeout(withAuthorization(ctx, slot.auth), cfg.RequestTimeout)
		_, err := client.CoordinationV1().Leases(cfg.Namespace).Get(rctx, slot.name, metav1.GetOptions{})
		cancel()
		switch {
		case err == nil || apierrors.IsNotFound(err):
			return nil
		case apierrors.IsForbidden(err) && strings.Contains(err.Error(), `User "`+request.AnonymousUser+`"`):
			// A server with token authentication answers an unknown token
			// 401; this one ignored the token altogether.
			return fmt.Errorf("the server ignores bearer tokens (it took node %s for %s): start it with --token-auth-file %s: %w",
				slot.name, request.AnonymousUser, tokens.Path(), err)
		case apierrors.IsForbidden(err):
			return fmt.Errorf("the server authenticates node %s but forbids it its own lease (is the Node authorizer on?): %w", slot.name, err)
		case !apierrors.IsUnauthorized(err):
			return fmt.Errorf("checking node %s's token: %w", slot.name, err)
		case time.Now().After(deadline):
			return fmt.Errorf("the server did not accept node %s's token from %s within %v: start it with --token-auth-file %s: %w",
				slot.name, tokens.Path(), wait, tokens.Path(), err)
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
