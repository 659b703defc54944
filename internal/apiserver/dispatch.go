package apiserver

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/leasehold/leasehold/internal/registry"
)

// statusRecorder remembers the response code for metrics.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Flush lets watch streams push frames through the recorder.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *Server) serveNonResource(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/healthz", "/livez", "/readyz":
	default:
		if !s.authenticate(w, r) {
			return
		}
	}
	if s.cfg.NonResource == nil {
		http.NotFound(w, r)
		return
	}
	s.cfg.NonResource.ServeHTTP(w, r)
}

// authenticate answers 401 and returns false when the caller is unknown.
// The identity itself is not kept: nothing authorizes by it yet (every
// authenticated caller may do everything), and attaching it to the request
// cost a context and a request copy on every call.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) bool {
	if isLoopback(r) {
		return true
	}
	if s.cfg.Authenticator != nil {
		if _, ok := s.cfg.Authenticator.Authenticate(r); ok {
			return true
		}
	}
	s.writeError(w, r, apierrors.NewUnauthorized("Unauthorized"))
	return false
}

func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, info requestInfo) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w}
	// Metric labels name only served resources and known verbs: the path
	// and method are the client's, and used as labels they would grow the
	// metrics without bound (and panic on invalid UTF-8).
	var metricGroup, metricResource string
	metricVerb := info.verb
	if !isKnownVerb(metricVerb) {
		metricVerb = "other"
	}
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.logger.Error("panic serving request", "path", r.URL.Path, "panic", p)
			if rec.code == 0 {
				s.writeError(rec, r, fmt.Errorf("panic: %v", p))
			}
		}
		if info.verb != "watch" {
			s.cfg.Metrics.Latency.WithLabelValues(metricVerb, metricGroup, metricResource).Observe(time.Since(start).Seconds())
		}
		s.cfg.Metrics.Requests.WithLabelValues(metricVerb, metricGroup, metricResource, strconv.Itoa(rec.code)).Inc()
	}()
	if !s.authenticate(rec, r) {
		return
	}
	res, ok := s.cfg.Resources.Lookup(info.group, info.version, info.resource)
	if !ok {
		s.writeError(rec, r, apierrors.NewNotFound(schema.GroupResource{Group: info.group, Resource: info.resource}, ""))
		return
	}
	metricGroup, metricResource = res.GroupVersion.Group, res.Resource
	if err := checkScope(res, info); err != nil {
		s.writeError(rec, r, err)
		return
	}
	s.serveVerb(rec, r, res, info)
}

// isKnownVerb tells the verbs used as metric labels; any other is "other".
func isKnownVerb(v string) bool {
	switch v {
	case "get", "list", "watch", "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

func checkScope(res *registry.Resource, info requestInfo) error {
	switch {
	case info.subresource != "" && (info.subresource != "status" || !res.StatusSubresource):
		return apierrors.NewNotFound(res.GroupResource(), info.name)
	case !res.Namespaced && info.namespace != "":
		return apierrors.NewNotFound(res.GroupResource(), info.name)
	case res.Namespaced && info.namespace == "" && info.name != "":
		return apierrors.NewNotFound(res.GroupResource(), info.name)
	case info.subresource == "status" && info.verb != "get" && info.verb != "update" && info.verb != "patch":
		return apierrors.NewMethodNotSupported(res.GroupResource(), info.verb)
	}
	return nil
}

func (s *Server) serveVerb(w http.ResponseWriter, r *http.Request, res *registry.Resource, info requestInfo) {
	var err error
	switch info.verb {
	case "get":
		err = s.get(w, r, res, info)
	case "list":
		err = s.list(w, r, res, info)
	case "watch":
		err = s.watch(w, r, res, info)
	case "create":
		if info.name != "" {
			err = apierrors.NewMethodNotSupported(res.GroupResource(), "create")
		} else {
			err = s.create(w, r, res, info)
		}
	case "update":
		err = s.update(w, r, res, info)
	case "patch":
		err = s.patch(w, r, res, info)
	case "delete":
		err = s.delete(w, r, res, info)
	case "deletecollection":
		if info.namespace == "" && res.Namespaced {
			err = apierrors.NewMethodNotSupported(res.GroupResource(), "deletecollection")
		} else {
			err = s.deleteCollection(w, r, res, info)
		}
	default:
		err = apierrors.NewMethodNotSupported(res.GroupResource(), info.verb)
	}
	if err != nil {
		s.writeError(w, r, err)
	}
}
