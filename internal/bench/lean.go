package bench

import (
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"path"
	"sync"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// The lean client renews leases with hand-built HTTP requests over HTTP/2
// with client-go's TLS settings and credentials (leantransport.go), skipping
// client-go's request machinery: URL assembly with path.Join on every call,
// query parameters by reflection, rate limiter, retry and metrics wrappers,
// and the versioning codec layers. On a machine whose cores the load
// generator shares with the server, that machinery's CPU is taken from the
// server, so the lean client measures the server more closely, as h2load
// would. Encoding and decoding still go through apimachinery's serializers
// for client-go's scheme, so the bytes on the wire are the typed client's.

// leanConn is what every worker on one connection shares: the HTTP client
// built for it and how to reach and speak to the Lease API. It is
// read-only after newLeanConn, so safe for concurrent use.
type leanConn struct {
	http      *http.Client
	mediaType string
	encoder   runtime.Encoder
	// infos decode answers by the media type the server chose.
	infos     []runtime.SerializerInfo
	decoder   runtime.Decoder // for answers in mediaType, the usual case
	userAgent string
	urls      *leaseURLs
}

// newLeanConn wraps httpClient, which must carry cfg's TLS settings and
// authentication (Clients.leanHTTPClient), to send cfg.ContentType (as
// setContentType leaves it) as cfg.UserAgent (as newLeanPair leaves it).
func newLeanConn(cfg *rest.Config, httpClient *http.Client, urls *leaseURLs) (*leanConn, error) {
	mediaType := cfg.ContentType
	if mediaType == "" {
		mediaType = runtime.ContentTypeJSON
	}
	infos := scheme.Codecs.SupportedMediaTypes()
	info, ok := runtime.SerializerInfoForMediaType(infos, mediaType)
	if !ok {
		return nil, fmt.Errorf("client-go's scheme has no serializer for %s", mediaType)
	}
	return &leanConn{
		http:      httpClient,
		mediaType: mediaType,
		encoder:   info.Serializer,
		infos:     infos,
		decoder:   info.Serializer,
		userAgent: cfg.UserAgent,
		urls:      urls,
	}, nil
}

// decoderFor returns the decoder for an answer's Content-Type, or nil if
// client-go's scheme has none.
func (c *leanConn) decoderFor(contentType string) runtime.Decoder {
	if contentType == c.mediaType {
		return c.decoder
	}
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil
	}
	info, ok := runtime.SerializerInfoForMediaType(c.infos, mediaType)
	if !ok {
		return nil
	}
	return info.Serializer
}

// leaseURLs computes each lease's URL once: building it (and parsing it
// back, as http.NewRequest would) on every renewal is the kind of per-request
// work the lean client exists to avoid. Shared by every connection, since
// they all reach the same server.
type leaseURLs struct {
	base *url.URL // the server, with any path prefix it is served under
	// versioned is the coordination.k8s.io/v1 path under base.
	versioned string
	cache     sync.Map // leaseKey -> *url.URL
}

// leaseKey names a lease, or with name "" the leases of a namespace.
type leaseKey struct{ namespace, name string }

func newLeaseURLs(cfg *rest.Config) (*leaseURLs, error) {
	withGroup := rest.CopyConfig(cfg)
	withGroup.APIPath = "/apis"
	withGroup.GroupVersion = &coordinationv1.SchemeGroupVersion
	base, versioned, err := rest.DefaultServerUrlFor(withGroup)
	if err != nil {
		return nil, fmt.Errorf("server URL of %q: %w", cfg.Host, err)
	}
	return &leaseURLs{base: base, versioned: versioned}, nil
}

// get returns the URL of the named lease, or of the namespace's lease
// collection when name is empty. The URL is shared: callers must not modify it.
func (u *leaseURLs) get(namespace, name string) *url.URL {
	key := leaseKey{namespace, name}
	if cached, ok := u.cache.Load(key); ok {
		return cached.(*url.URL)
	}
	built := *u.base
	built.Path = path.Join(u.base.Path, u.versioned, "namespaces", namespace, "leases", name)
	cached, _ := u.cache.LoadOrStore(key, &built)
	return cached.(*url.URL)
}
