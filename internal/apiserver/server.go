// Package apiserver is Leasehold's lean Kubernetes API request path: routing,
// authentication, content negotiation, the eight verbs, watch streams and
// Status errors, for every resource described in internal/registry.
//
// It deliberately does not use k8s.io/apiserver's generic registry (see SPEC
// §3): a renewal must stay near 100 µs of CPU. It does use apimachinery for
// everything with a wire format: codecs, selectors, Status errors, patches and
// managed fields.
//
// Invariants:
//   - Every response to a resource request is either the object (or list,
//     table, metadata) in the negotiated encoding, or a metav1.Status with a
//     4xx/5xx code; a panic in a handler becomes a 500 Status.
//   - Reads are served from the watch cache; a read that must be consistent
//     first waits until the cache has caught up with the store's revision.
//   - Writes go to storage with a revision precondition, so two writers can
//     never both succeed from the same observed state.
//   - Objects taken from the cache are shared: handlers deep-copy before
//     mutating.
package apiserver

import (
	"log/slog"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/leasehold/leasehold/internal/intern"
	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/storage"
	"github.com/leasehold/leasehold/internal/watchcache"
)

// MaxRequestBodyBytes is kube-apiserver's limit on request bodies (3 MiB).
const MaxRequestBodyBytes = 3 * 1024 * 1024

// Config holds the server's dependencies.
type Config struct {
	Resources *registry.Set
	Scheme    *runtime.Scheme
	Store     storage.Interface
	Cache     *watchcache.Cache
	// Intern, when set, is the table Cache's decoder interns with
	// (StorageDecoder). With it, and a Store that is a storage.ObjectWriter,
	// an update of a resource with HandOffUpdates interns the object it
	// writes and hands it to the cache (StorageAdopter), which then does
	// not decode the stored value: a renewal decoded its lease twice.
	Intern *intern.Table
	// TypeConverter enables managedFields and server-side apply.
	TypeConverter managedfields.TypeConverter
	// Authenticator identifies the caller; nil means every request is anonymous
	// and rejected with 401.
	Authenticator Authenticator
	// NonResource serves everything that is not a resource request
	// (discovery, OpenAPI, health, metrics). Nil answers 404.
	NonResource http.Handler
	Metrics     *Metrics
	Logger      *slog.Logger
	Now         func() time.Time
	// MinRequestTimeout bounds watches without timeoutSeconds (default 30 min).
	MinRequestTimeout time.Duration
	// StopWatches, when closed, ends every open watch (graceful shutdown:
	// http.Server.Shutdown waits for handlers, and watches never end alone).
	StopWatches <-chan struct{}
}

// Server serves the resource API.
type Server struct {
	cfg        Config
	codecs     serializer.CodecFactory
	storageEnc runtime.Encoder
	storageDec runtime.Decoder
	managers   map[*registry.Resource]*fieldManagers
	// fieldSets and accepts memoize per-request parsing that repeats.
	fieldSets *boundedCache[*fieldpath.Set]
	accepts   *boundedCache[[]acceptItem]
	// encodeBufs recycles response encoding memory, bodies the memory of
	// write request bodies.
	encodeBufs encodeBuffers
	bodies     byteBuffers
	// stamps and ownedKeys serve the renewal shortcut (managedfast.go).
	stamps    secondStamps
	ownedKeys byteBuffers
	logger    *slog.Logger
	now       func() time.Time
}

// New builds a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MinRequestTimeout == 0 {
		cfg.MinRequestTimeout = 30 * time.Minute
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	s := &Server{
		cfg: cfg,
		// Not EnableStrict: that makes SerializerInfo.Serializer strict too,
		// and fieldValidation=Ignore (kubectl --validate=false) relies on a
		// lenient Serializer beside the StrictSerializer.
		codecs: serializer.NewCodecFactory(cfg.Scheme),
		logger: cfg.Logger,
		now:    cfg.Now,
	}
	s.storageEnc, s.storageDec = newStorageCodec(cfg.Scheme)
	s.fieldSets = newBoundedCache(4096, parseFieldSet)
	s.accepts = newBoundedCache(1024, func(h string) ([]acceptItem, bool) { return parseAccept(h), true })
	managers, err := newFieldManagers(cfg)
	if err != nil {
		return nil, err
	}
	s.managers = managers
	return s, nil
}

// ServeHTTP routes resource requests to the verbs and the rest to NonResource.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	info, ok := parseRequestInfo(r)
	if !ok || info.resource == "" {
		s.serveNonResource(w, r)
		return
	}
	s.serveResource(w, r, info)
}
