package server

import (
	"crypto/x509"

	"github.com/leasehold/leasehold/internal/authn"
)

// newAuthenticator builds the request authenticator from serve's flags, as
// kube-apiserver composes it: client certificates verified against
// clientCAs (the CA in DataDir plus --client-ca-file, i.e. the TLS config's
// ClientCAs), static bearer tokens from --token-auth-file, and anonymous
// requests unless --anonymous-auth=false. A token file that cannot be loaded
// stops the server with kube-apiserver's message.
//
// The chain's Run must run for the server's lifetime (with the other
// background work): it re-reads the token file when it changes.
//
// Behind a cluster, the cluster's delegated authentication (delegated, from
// internal/cluster) is asked first: kube-apiserver's front-proxy headers,
// the cluster's client certificates and its TokenReviews; Leasehold's own
// CA still admits its admin kubeconfig.
func newAuthenticator(cfg Config, clientCAs *x509.CertPool, delegated authn.Authenticator) (*authn.Chain, error) {
	ac := authn.Config{
		ClientCAs: clientCAs,
		TokenFile: cfg.TokenAuthFile,
		Anonymous: !cfg.DisableAnonymousAuth,
		Delegated: delegated,
	}
	if cfg.Logger != nil {
		ac.Logger = cfg.Logger.With("component", "authn")
	}
	return authn.New(ac)
}
