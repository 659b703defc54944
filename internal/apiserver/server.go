package apiserver

import (
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/managedfields"

	"github.com/leasehold/leasehold/internal/admission"
	"github.com/leasehold/leasehold/internal/apiserver/respond"
	"github.com/leasehold/leasehold/internal/audit"
	"github.com/leasehold/leasehold/internal/authn"
	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/intern"
	"github.com/leasehold/leasehold/internal/objects"
	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/request"
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
	// (objects.NewForm). With it, an update of a resource with
	// HandOffUpdates interns the object it writes and hands it to the cache
	// (watchcache.Cache.Expect, then objects.Form.CacheOptions' Adopt),
	// which then does not decode the stored value: a renewal decoded its
	// lease twice.
	Intern *intern.Table
	// TypeConverter enables managedFields and server-side apply.
	TypeConverter managedfields.TypeConverter
	// Authenticator identifies the caller (internal/authn); nil answers
	// every request but the loopback transport's with 401.
	Authenticator authn.Authenticator
	// Authorizer decides every request, resource or not (internal/authz:
	// the --authorization-mode chain). Required.
	Authorizer authz.Authorizer
	// Admission checks every write before it is stored
	// (internal/admission); nil admits everything.
	Admission admission.Interface
	// Limits bound concurrent requests and watches (zero: unlimited).
	Limits Limits
	// Auditor writes the audit trail (internal/audit); nil audits nothing.
	// Every request gets an audit ID (sent back as Audit-ID) either way.
	Auditor *audit.Auditor
	// Finish receives every request's finished record once its response
	// is written (for a watch, once the stream ends): the end-of-request
	// seam. Nil records the request metrics (ObserveMetrics); a caller that
	// sets it and wants the metrics calls ObserveMetrics's function too.
	Finish func(*request.Record)
	// NonResource serves everything that is not a resource request
	// (discovery, OpenAPI, health, metrics) once it is authorized. Nil
	// answers 404.
	NonResource http.Handler
	Metrics     *Metrics
	Logger      *slog.Logger
	Now         func() time.Time
	// MinRequestTimeout bounds watches without timeoutSeconds (default 30 min).
	MinRequestTimeout time.Duration
	// Timeout bounds every other request (--request-timeout,
	// limits.go); zero means DefaultRequestTimeout, negative no bound.
	Timeout time.Duration
	// StopWatches, when closed, ends every open watch (graceful shutdown:
	// http.Server.Shutdown waits for handlers, and watches never end alone).
	StopWatches <-chan struct{}
	// WatchFlushInterval spaces a watch stream's flushes (see
	// DefaultWatchFlushInterval, used when zero); negative flushes after
	// every event, as kube-apiserver does (the benchmark's baseline).
	WatchFlushInterval time.Duration
}

// Server serves the resource API.
type Server struct {
	cfg    Config
	codecs serializer.CodecFactory
	// form is the stored form of objects, objects the object layer over
	// the store and the cache (package objects).
	form    *objects.Form
	objects *objects.Store
	// neg negotiates responses and out writes them (package respond);
	// jsonInfo is the JSON serializer, for patches and fallbacks.
	neg      *respond.Negotiator
	out      *respond.Writer
	jsonInfo runtime.SerializerInfo
	// bodies recycles the memory of write request bodies.
	bodies byteBuffers
	// answers holds the protobuf answers to writes spliced from their
	// stored encoding (respondWritten).
	answers byteBuffers
	limits  *limiter
	// cancellations summarizes requests their clients abandoned.
	cancellations cancellationLog
	// noWriteDeadlines is set once a watch met a writer without deadlines
	// (logged once).
	noWriteDeadlines atomic.Bool
	logger           *slog.Logger
	now              func() time.Time
}

// New builds a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Authorizer == nil {
		return nil, errors.New("apiserver: Config.Authorizer is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultRequestTimeout
	}
	if cfg.MinRequestTimeout == 0 {
		cfg.MinRequestTimeout = 30 * time.Minute
	}
	if cfg.WatchFlushInterval == 0 {
		cfg.WatchFlushInterval = DefaultWatchFlushInterval
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	if cfg.Finish == nil {
		cfg.Finish = ObserveMetrics(cfg.Metrics, cfg.Resources)
	}
	limitJSONPatchCopies()
	s := &Server{
		cfg: cfg,
		// Not EnableStrict: that makes SerializerInfo.Serializer strict too,
		// and fieldValidation=Ignore (kubectl --validate=false) relies on a
		// lenient Serializer beside the StrictSerializer.
		codecs: serializer.NewCodecFactory(cfg.Scheme),
		limits: newLimiter(cfg.Limits),
		logger: cfg.Logger,
		now:    cfg.Now,
	}
	s.form = objects.NewForm(cfg.Scheme, cfg.Resources, cfg.Intern)
	s.neg = respond.NewNegotiator(s.codecs.SupportedMediaTypes())
	s.out = respond.NewWriter(cfg.Logger)
	s.jsonInfo, _ = s.neg.SerializerFor(runtime.ContentTypeJSON)
	objs, err := objects.NewStore(objects.Config{
		Resources:     cfg.Resources,
		Scheme:        cfg.Scheme,
		Storage:       cfg.Store,
		Cache:         cfg.Cache,
		Form:          s.form,
		Intern:        cfg.Intern,
		TypeConverter: cfg.TypeConverter,
		Admission:     cfg.Admission,
		StorageReads:  cfg.Metrics.StorageReads,
		Now:           cfg.Now,
	})
	if err != nil {
		return nil, err
	}
	s.objects = objs
	return s, nil
}
