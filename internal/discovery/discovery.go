package discovery

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/leasehold/leasehold/internal/apiserver/respond"
	"github.com/leasehold/leasehold/internal/registry"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apidiscoveryv2beta1 "k8s.io/api/apidiscovery/v2beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/version"
)

// Discovery serves the discovery documents of one registry.Set. It is an
// http.Handler for exactly the discovery paths (anything else is a 404
// Status); Register mounts it on a ServeMux next to the resource handlers.
type Discovery struct {
	set    *registry.Set
	info   version.Info
	logger *slog.Logger
	// serverAddress is advertised in /api's serverAddressByClientCIDRs; when
	// empty the address the client connected to is used.
	serverAddress string

	groups []groupInfo
	scheme *runtime.Scheme
	codecs serializer.CodecFactory
	neg    *respond.Negotiator
	out    *respond.Writer

	// Entity tags of the aggregated documents of /api and /apis; empty when
	// hashing failed, in which case responses simply carry no ETag.
	apiETag, apisETag string
}

// Option configures a Discovery.
type Option func(*Discovery)

// WithLogger sets the logger for encoding failures and refused requests.
// The default discards logs.
func WithLogger(l *slog.Logger) Option {
	return func(d *Discovery) { d.logger = l }
}

// WithServerAddress sets the host:port advertised to clients in /api's
// serverAddressByClientCIDRs (kube-apiserver advertises its
// --advertise-address and secure port). Without it the local address of each
// request's connection is used, which is always reachable by that client.
func WithServerAddress(hostPort string) Option {
	return func(d *Discovery) { d.serverAddress = hostPort }
}

// New builds the discovery handler for resources, reporting info at
// /version (see DefaultVersionInfo). resources must not change afterwards.
func New(resources *registry.Set, info version.Info, opts ...Option) *Discovery {
	d := &Discovery{
		set:    resources,
		info:   info,
		logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		groups: groupsOf(resources),
		scheme: runtime.NewScheme(),
	}
	for _, o := range opts {
		o(d)
	}
	// The scheme holds only static, well-formed registrations; a failure here
	// is a programming error, hence Must.
	metav1.AddToGroupVersion(d.scheme, schema.GroupVersion{Version: "v1"})
	utilruntime.Must(apidiscoveryv2.AddToScheme(d.scheme))
	utilruntime.Must(apidiscoveryv2beta1.AddToScheme(d.scheme))
	d.codecs = serializer.NewCodecFactory(d.scheme, serializer.EnablePretty)
	d.neg = respond.NewNegotiator(d.codecs.SupportedMediaTypes())
	d.out = respond.NewWriter(d.logger)

	var err error
	if core, ok := coreGroup(d.groups); ok {
		if d.apiETag, err = aggregatedETag(aggregatedList(d.set, []groupInfo{core})); err != nil {
			d.logger.Error("aggregated discovery for /api served without ETag", "err", err)
		}
	}
	if d.apisETag, err = aggregatedETag(aggregatedList(d.set, namedGroups(d.groups))); err != nil {
		d.logger.Error("aggregated discovery for /apis served without ETag", "err", err)
	}
	return d
}

// Register mounts the discovery paths on mux with Go 1.22 patterns that do
// not overlap the resource paths (/api/v1/..., /apis/<group>/<version>/...).
// Each path is served with and without a trailing slash, as kube-apiserver
// does (the OpenAPI documents list /api/v1/ and /apis/<group>/<version>/,
// so generated clients call those). Register also takes mux's fallback
// "/": a path nothing else on mux serves gets kube-apiserver's 404 Status
// (and a discovery path asked with another method its 405 Status), not the
// mux's plain-text 404.
func (d *Discovery) Register(mux *http.ServeMux) {
	for _, p := range []string{
		"GET /api", "GET /api/{$}", "GET /api/{version}", "GET /api/{version}/{$}",
		"GET /apis", "GET /apis/{$}", "GET /apis/{group}", "GET /apis/{group}/{$}",
		"GET /apis/{group}/{version}", "GET /apis/{group}/{version}/{$}",
		"GET /version", "GET /version/{$}",
		"/",
	} {
		mux.Handle(p, d)
	}
}

// ServeHTTP serves one discovery document; any other path is a 404 Status.
func (d *Discovery) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if len(path) > 1 {
		path = strings.TrimSuffix(path, "/")
	}
	segments := strings.Split(strings.TrimPrefix(path, "/"), "/")
	var serve func()
	switch {
	case path == "/version":
		serve = func() { d.serveVersion(w) }
	case segments[0] == "api" && len(segments) == 1:
		serve = func() { d.serveAPI(w, r) }
	case segments[0] == "api" && len(segments) == 2:
		serve = func() { d.serveResourceList(w, r, schema.GroupVersion{Version: segments[1]}) }
	case segments[0] == "apis" && len(segments) == 1:
		serve = func() { d.serveAPIs(w, r) }
	case segments[0] == "apis" && len(segments) == 2 && segments[1] != "":
		serve = func() { d.serveGroup(w, r, segments[1]) }
	case segments[0] == "apis" && len(segments) == 3 && segments[1] != "":
		serve = func() { d.serveResourceList(w, r, schema.GroupVersion{Group: segments[1], Version: segments[2]}) }
	default:
		d.writeStatus(w, statusNotFound())
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		d.writeStatus(w, statusMethodNotAllowed(r.Method))
		return
	}
	serve()
}

// serveVersion writes version.Info as indented JSON, as kube-apiserver does
// (it is not a runtime.Object and is never negotiated).
func (d *Discovery) serveVersion(w http.ResponseWriter) {
	d.out.RawJSON(w, http.StatusOK, d.info)
}

func (d *Discovery) serveAPI(w http.ResponseWriter, r *http.Request) {
	core, ok := coreGroup(d.groups)
	if !ok {
		d.writeStatus(w, statusNotFound())
		return
	}
	n, ok := d.negotiate(w, r, aggregatedAllowed)
	if !ok {
		return
	}
	w.Header().Set("Vary", "Accept")
	if n.target != nil {
		d.writeAggregated(w, r, n, aggregatedList(d.set, []groupInfo{core}), d.apiETag)
		return
	}
	// kube-apiserver strips apiVersion from /api and /api/v1 for
	// compatibility with release 1.1 clients; byte-compatible output keeps it.
	d.writeObject(w, n, apiVersions(core, d.addresses(r)), nil)
}

func (d *Discovery) serveAPIs(w http.ResponseWriter, r *http.Request) {
	n, ok := d.negotiate(w, r, aggregatedAllowed)
	if !ok {
		return
	}
	w.Header().Set("Vary", "Accept")
	if n.target != nil {
		d.writeAggregated(w, r, n, aggregatedList(d.set, namedGroups(d.groups)), d.apisETag)
		return
	}
	d.writeObject(w, n, apiGroupList(d.groups), metav1.Unversioned)
}

func (d *Discovery) serveGroup(w http.ResponseWriter, r *http.Request, group string) {
	for _, g := range namedGroups(d.groups) {
		if g.name != group {
			continue
		}
		if n, ok := d.negotiate(w, r, plainOnly); ok {
			d.writeObject(w, n, apiGroup(g), metav1.Unversioned)
		}
		return
	}
	d.writeStatus(w, statusNotFound())
}

func (d *Discovery) serveResourceList(w http.ResponseWriter, r *http.Request, gv schema.GroupVersion) {
	if len(resourcesIn(d.set, gv)) == 0 {
		d.writeStatus(w, statusNotFound())
		return
	}
	n, ok := d.negotiate(w, r, plainOnly)
	if !ok {
		return
	}
	var encodeAs runtime.GroupVersioner = metav1.Unversioned
	if gv.Group == "" {
		encodeAs = nil // version stripped, see serveAPI
	}
	d.writeObject(w, n, apiResourceList(d.set, gv), encodeAs)
}

// writeAggregated writes an aggregated list in the negotiated version with
// kube-apiserver's caching headers, answering 304 when the client already
// holds this entity.
func (d *Discovery) writeAggregated(w http.ResponseWriter, r *http.Request, n negotiated, list *apidiscoveryv2.APIGroupDiscoveryList, etag string) {
	if etag != "" {
		quoted := strconv.Quote(etag)
		w.Header().Set("ETag", quoted)
		w.Header().Set("Cache-Control", "public")
		if r.Header.Get("If-None-Match") == quoted {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	gv := n.target.GroupVersion()
	d.writeObject(w, n, aggregatedFor(list, gv), gv)
}

// negotiate runs content negotiation and answers 406 when nothing fits.
func (d *Discovery) negotiate(w http.ResponseWriter, r *http.Request, allowed transformAllowed) (negotiated, bool) {
	n, ok := negotiate(d.neg, r.Header.Get("Accept"), allowed)
	if !ok {
		d.logger.Debug("discovery request refused: no acceptable media type", "path", r.URL.Path, "accept", r.Header.Get("Accept"))
		d.writeStatus(w, respond.NotAcceptable(d.neg.MediaTypes()))
		return negotiated{}, false
	}
	n.pretty = n.pretty || prettyRequested(r)
	return n, true
}

// addresses is /api's serverAddressByClientCIDRs: one catch-all entry, as
// kube-apiserver publishes when no extra CIDR rules are configured.
func (d *Discovery) addresses(r *http.Request) []metav1.ServerAddressByClientCIDR {
	addr := d.serverAddress
	if addr == "" {
		if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			addr = local.String()
		} else {
			addr = r.Host
		}
	}
	return []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: addr}}
}

// prettyRequested mirrors kube-apiserver: ?pretty=true, or a user agent that
// is a human's tool (curl, wget, a browser).
func prettyRequested(r *http.Request) bool {
	if p := r.URL.Query().Get("pretty"); p != "" {
		b, _ := strconv.ParseBool(p)
		return b
	}
	ua := r.UserAgent()
	return strings.HasPrefix(ua, "curl") || strings.HasPrefix(ua, "Wget") || strings.HasPrefix(ua, "Mozilla/5.0")
}
