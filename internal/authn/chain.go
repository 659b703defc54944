package authn

import (
	"context"
	"crypto/x509"
	"log/slog"
	"net/http"
	"time"

	"github.com/leasehold/leasehold/internal/request"
)

// Config is what the server's flags say about authentication.
type Config struct {
	// ClientCAs verifies client certificates (our CA plus --client-ca-file);
	// nil disables client certificate authentication.
	ClientCAs *x509.CertPool
	// CertCacheSize bounds the cached certificate verifications
	// (DefaultCertCacheSize if 0).
	CertCacheSize int
	// TokenFile is --token-auth-file; without it no bearer token is valid.
	TokenFile string
	// TokenFilePollInterval is how often the token file is checked for
	// changes (DefaultTokenFilePollInterval if 0).
	TokenFilePollInterval time.Duration
	// Anonymous is --anonymous-auth: requests with no credential at all are
	// system:anonymous in system:unauthenticated. Without it they are not
	// authenticated (ok=false), which the pipeline answers 401.
	Anonymous bool
	// Delegated, when set, is asked first: the cluster's authentication
	// when serve runs behind one (internal/cluster), whose front-proxy
	// headers must win over everything Leasehold knows itself.
	Delegated Authenticator
	// Logger receives token file warnings and reloads (never a token);
	// nil discards them.
	Logger *slog.Logger
}

// Chain is the server's authenticator, composed as kube-apiserver's:
//
//	FailOnError{ AuthenticatedGroupAdder{ Union{ client certificate, bearer token } }, Anonymous }
//
// The first credential that identifies the caller wins; a presented but
// invalid credential is an error (401) unless another one succeeds; only a
// request that presents no credential is anonymous.
type Chain struct {
	auth   Authenticator
	tokens *TokenFile // nil without a token file
}

// New builds the chain. A token file that cannot be loaded is an error with
// Kubernetes' message. Call Run to keep the token file current.
func New(cfg Config) (*Chain, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var (
		union Union
		c     Chain
	)
	if cfg.Delegated != nil {
		union = append(union, cfg.Delegated)
	}
	if cfg.ClientCAs != nil {
		union = append(union, NewCertAuthenticator(cfg.ClientCAs, cfg.CertCacheSize))
	}
	// Bearer tokens are read even without a token file: a presented token
	// that nobody knows is a 401, never an anonymous request, as on a
	// kube-apiserver (whose service account tokens are always on).
	var tokens TokenAuthenticator = noTokens{}
	if cfg.TokenFile != "" {
		tf, err := NewTokenFile(cfg.TokenFile, log.With("component", "token-file"), cfg.TokenFilePollInterval)
		if err != nil {
			return nil, err
		}
		c.tokens, tokens = tf, tf
	}
	union = append(union, BearerAuthenticator{Tokens: tokens})
	c.auth = AuthenticatedGroupAdder{Authenticator: union}
	if cfg.Anonymous {
		c.auth = FailOnError{c.auth, Anonymous{}}
	}
	return &c, nil
}

// AuthenticateRequest implements Authenticator. The returned user's Groups
// and Extra may be shared with the chain's caches: do not modify them in
// place.
func (c *Chain) AuthenticateRequest(r *http.Request) (request.User, bool, error) {
	return c.auth.AuthenticateRequest(r)
}

// Run keeps the token file's tokens current until ctx ends; it returns nil
// then. Without a token file it only waits for ctx.
func (c *Chain) Run(ctx context.Context) error {
	if c.tokens == nil {
		<-ctx.Done()
		return nil
	}
	return c.tokens.Run(ctx)
}

// noTokens knows no token.
type noTokens struct{}

func (noTokens) AuthenticateToken(string) (request.User, bool, error) {
	return request.User{}, false, nil
}
