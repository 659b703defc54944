package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/internal/authn"
	"github.com/leasehold/leasehold/internal/request"
)

// The ConfigMap kube-apiserver publishes its front-proxy and client CA
// settings in, and its keys: the names every aggregated server reads.
const (
	AuthenticationConfigMapNamespace = "kube-system"
	AuthenticationConfigMapName      = "extension-apiserver-authentication"

	keyClientCA                 = "client-ca-file"
	keyRequestHeaderCA          = "requestheader-client-ca-file"
	keyRequestHeaderUsernames   = "requestheader-username-headers"
	keyRequestHeaderUIDs        = "requestheader-uid-headers"
	keyRequestHeaderGroups      = "requestheader-group-headers"
	keyRequestHeaderExtraPrefix = "requestheader-extra-headers-prefix"
	keyRequestHeaderAllowed     = "requestheader-allowed-names"
)

// tokenReviewTTL is how long a TokenReview's answer is reused, as kube's
// delegating authenticator (--authentication-token-webhook-cache-ttl 10s):
// a client reusing one token costs the cluster one review per 10 s.
const tokenReviewTTL = 10 * time.Second

// delegatedAuthn is the delegated authentication: front-proxy headers over
// a request-header client certificate, then a certificate of the cluster's
// client CA, then a bearer token reviewed by the cluster. Its parts are
// k8s.io/apiserver's, the ones metrics-server and sample-apiserver run (so
// header parsing, X-Remote-Extra-* unescaping and allowed names are kube's
// own), but for the front proxy's certificate check, whose verdict is
// remembered (frontproxy.go).
type delegatedAuthn struct {
	// front is the front proxy (kube-apiserver itself) and its headers,
	// asked first as in kube's delegating authenticator (frontproxy.go).
	front *frontProxyAuthn
	// certs is the cluster's client certificates, tokens its TokenReview.
	certs  *clientCertAuthn
	tokens authenticator.Request
	// runners follow the ConfigMap (or, with flag overrides, the files).
	runners []dynamiccertificates.ControllerRunner
}

// newDelegatedAuthn builds the authenticator. Settings given as flags
// (cfg.RequestHeader, cfg.ClientCAFile) replace the ConfigMap's; those not
// given are read from it and followed.
func newDelegatedAuthn(cfg Config, client kubernetes.Interface) (*delegatedAuthn, error) {
	d := &delegatedAuthn{}
	clientCA, err := d.caProvider("client-ca", cfg.ClientCAFile, keyClientCA, client)
	if err != nil {
		return nil, err
	}
	rh := cfg.RequestHeader
	rhCA, err := d.caProvider("request-header", rh.ClientCAFile, keyRequestHeaderCA, client)
	if err != nil {
		return nil, err
	}
	rhc := &authenticatorConfigRH{verifyOptions: rhCA.VerifyOptions}
	if rh.ClientCAFile != "" {
		// Flags: static header settings, as kube's options do when the
		// request-header CA is given on the command line.
		rhc.usernames = headerrequest.StaticStringSlice(rh.UsernameHeaders)
		rhc.uids = headerrequest.StaticStringSlice(rh.UIDHeaders)
		rhc.groups = headerrequest.StaticStringSlice(rh.GroupHeaders)
		rhc.extraPrefixes = headerrequest.StaticStringSlice(rh.ExtraHeaderPrefixes)
		rhc.allowedNames = headerrequest.StaticStringSlice(rh.AllowedNames)
	} else {
		c := headerrequest.NewRequestHeaderAuthRequestController(AuthenticationConfigMapName, AuthenticationConfigMapNamespace, client,
			keyRequestHeaderUsernames, keyRequestHeaderUIDs, keyRequestHeaderGroups, keyRequestHeaderExtraPrefix, keyRequestHeaderAllowed)
		d.runners = append(d.runners, c)
		rhc.usernames = headerrequest.StringSliceProviderFunc(c.UsernameHeaders)
		rhc.uids = headerrequest.StringSliceProviderFunc(c.UIDHeaders)
		rhc.groups = headerrequest.StringSliceProviderFunc(c.GroupHeaders)
		rhc.extraPrefixes = headerrequest.StringSliceProviderFunc(c.ExtraHeaderPrefixes)
		rhc.allowedNames = headerrequest.StringSliceProviderFunc(c.AllowedClientNames)
	}
	d.front = newFrontProxyAuthn(rhc)
	d.certs = &clientCertAuthn{certs: newCertVerifier(clientCA.VerifyOptions, clientCertVerdicts)}
	tokens, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		// Anonymous requests are Leasehold's own decision (--anonymous-auth),
		// made after every authenticator, local ones included.
		Anonymous:                nil,
		TokenAccessReviewClient:  client.AuthenticationV1(),
		TokenAccessReviewTimeout: 10 * time.Second,
		WebhookRetryBackoff:      &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5},
		CacheTTL:                 tokenReviewTTL,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("delegated authentication: %w", err)
	}
	d.tokens = tokens
	return d, nil
}

// caProvider is the CA bundle from file when given, else from the
// ConfigMap's key (followed).
func (d *delegatedAuthn) caProvider(purpose, file, key string, client kubernetes.Interface) (dynamiccertificates.CAContentProvider, error) {
	if file != "" {
		p, err := dynamiccertificates.NewDynamicCAContentFromFile(purpose, file)
		if err != nil {
			return nil, fmt.Errorf("%s CA %s: %w", purpose, file, err)
		}
		d.runners = append(d.runners, p)
		return p, nil
	}
	p, err := dynamiccertificates.NewDynamicCAFromConfigMapController(purpose, AuthenticationConfigMapNamespace, AuthenticationConfigMapName, key, client)
	if err != nil {
		return nil, fmt.Errorf("%s CA from %s/%s: %w", purpose, AuthenticationConfigMapNamespace, AuthenticationConfigMapName, err)
	}
	d.runners = append(d.runners, p)
	return p, nil
}

// prime loads every setting once, so that the first request is judged with
// them. A cluster whose ConfigMap lacks the request-header keys still
// serves: such requests then fail authentication until the keys appear.
func (d *delegatedAuthn) prime(ctx context.Context) error {
	for _, r := range d.runners {
		if err := r.RunOnce(ctx); err != nil {
			return fmt.Errorf("loading the cluster's authentication settings: %w", err)
		}
	}
	return nil
}

// run follows the settings until ctx ends.
func (d *delegatedAuthn) run(ctx context.Context) {
	done := make(chan struct{}, len(d.runners))
	for _, r := range d.runners {
		go func() { r.Run(ctx, 1); done <- struct{}{} }()
	}
	for range d.runners {
		<-done
	}
}

// AuthenticateRequest implements authn.Authenticator over kube's
// authenticators, in kube's order: the front proxy, the cluster's client
// certificates, then TokenReview. The first that identifies the caller
// wins; when none does their errors are returned together (401), as
// kube's union does.
func (d *delegatedAuthn) AuthenticateRequest(r *http.Request) (request.User, bool, error) {
	var errs []error
	for _, a := range []authenticator.Request{d.front, d.certs, d.tokens} {
		resp, ok, err := a.AuthenticateRequest(r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok && resp != nil && resp.User != nil {
			u := resp.User
			return request.User{Name: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(), Extra: u.GetExtra()}, true, nil
		}
	}
	return request.User{}, false, errors.Join(errs...)
}

var _ authn.Authenticator = (*delegatedAuthn)(nil)

// waitCAs waits until every CA bundle has content: the ConfigMap
// controllers load theirs once their informer has synced, after prime.
func (d *delegatedAuthn) waitCAs(ctx context.Context) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		missing := ""
		for _, r := range d.runners {
			if p, ok := r.(dynamiccertificates.CAContentProvider); ok && len(p.CurrentCABundleContent()) == 0 {
				missing = p.Name()
				break
			}
		}
		if missing == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("CA bundle %s is still empty: %w", missing, ctx.Err())
		case <-t.C:
		}
	}
}
