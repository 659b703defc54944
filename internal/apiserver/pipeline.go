package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/leasehold/leasehold/internal/audit"
	"github.com/leasehold/leasehold/internal/registry"
	"github.com/leasehold/leasehold/internal/request"
)

// ServeHTTP is the whole request pipeline. Every request, resource or not,
// passes the same stages in this order, each reading and filling one
// request.Record:
//
//  1. request info (requestinfo.go): what the URL and method ask for;
//  2. authenticate (authenticate.go): who asks, or 401;
//  3. audit (audit.go): the policy's level for the request, and its
//     RequestReceived event (the request's audit ID was set on arrival);
//     then impersonation (impersonate.go): Impersonate-* headers, once
//     authorized, make the request act as another user;
//  4. limit (limits.go): in-flight and per-user limits, or 429;
//  5. authorize (authorize.go): may they, or 403;
//  6. serve (serveResource, below): the verb on the resource, which admits writes
//     (write.go) before storing them, or the non-resource handler;
//  7. finish (below): the response code goes into the record, a panic
//     becomes a 500, the audit event ends (ResponseComplete, or Panic), and
//     Config.Finish receives the finished record.
//
// The record is in the request's context from stage 2 on
// (request.RecordFrom), for the verbs, admission and review handlers.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The record and the writer that fills in its code share one
	// allocation: both live exactly as long as the request. The record, its
	// context value and the request copy carrying it cost a renewal 2
	// allocations and ~700 B (BenchmarkLeaseRenewal/plain: 96 -> 98
	// allocs/op); sharing this one takes one back (97).
	st := &struct {
		rec request.Record
		sw  statusRecorder
	}{rec: request.Record{Received: time.Now()}}
	rec, sw := &st.rec, &st.sw
	sw.ResponseWriter, sw.rec = w, rec
	assignAuditID(w, r, rec)
	info, isResource := readRequestInfo(r, &rec.Attributes)
	// The record and a resource request's deadline go into the context
	// together, in one context (request.WithDeadline, which also says what
	// the deadline costs): each r.WithContext copies the whole request
	// (256 B), and the deadline's own copy was 8% of the handler's garbage
	// (allocation profile of serve under bench max).
	// The deadline starts at arrival either way; a bad ?timeout= is still
	// answered at the verb stage, after authentication and authorization.
	var ctx context.Context
	var timeoutErr error
	var deadline time.Time
	var hasDeadline bool
	if isResource {
		deadline, hasDeadline, timeoutErr = s.requestDeadline(r, rec, info.verb)
	}
	if hasDeadline {
		var cancel context.CancelFunc
		ctx, cancel = request.WithDeadline(r.Context(), rec, deadline)
		defer cancel()
	} else {
		ctx = request.WithRecord(r.Context(), rec)
	}
	r = r.WithContext(ctx)
	defer s.finish(sw, r, rec)

	if !s.authenticate(sw, r, rec) {
		s.beginAudit(sw, r, rec, false)
		return
	}
	r = s.beginAudit(sw, r, rec, true)
	if !s.impersonate(sw, r, rec) {
		return
	}
	release, ok := s.limit(sw, r, rec)
	if !ok {
		return
	}
	defer release()
	if !s.authorize(sw, r, rec) {
		return
	}
	if !isResource {
		s.serveNonResource(sw, r)
		return
	}
	s.serveResource(sw, r, rec, info, timeoutErr)
}

// finish ends every request: a panic in a handler becomes a 500 Status
// (unless the response had begun), the audit event ends, and the finished
// record goes to the end-of-request hook (metrics).
func (s *Server) finish(w *statusRecorder, r *http.Request, rec *request.Record) {
	if p := recover(); p != nil {
		if p == http.ErrAbortHandler {
			w.audit.Panic(rec, p)
			panic(p)
		}
		s.logger.Error("panic serving request", "path", r.URL.Path, "panic", p)
		if rec.Code == 0 {
			s.writeError(w, r, fmt.Errorf("panic: %v", p))
		}
		w.audit.Panic(rec, p)
	}
	w.audit.End(rec)
	s.cfg.Finish(rec)
}

func (s *Server) serveNonResource(w http.ResponseWriter, r *http.Request) {
	if s.cfg.NonResource == nil {
		http.NotFound(w, r)
		return
	}
	s.cfg.NonResource.ServeHTTP(w, r)
}

// statusRecorder puts the response code into the record and, for an
// audited request, tells the audit event when a watch's response starts
// (writeObject logs the response objects through it, auditOf).
type statusRecorder struct {
	http.ResponseWriter
	rec   *request.Record
	audit *audit.Request // nil: not audited
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.rec.Code == 0 {
		w.rec.Code = code
	}
	w.audit.ResponseStarted(code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.rec.Code == 0 {
		w.rec.Code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the connection's writer (watch
// streams set write deadlines through it).
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush lets watch streams push frames through the recorder.
func (w *statusRecorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// serveResource is the pipeline's verb stage for resource requests: it
// finds the served resource, checks that the path addresses it the way its
// scope allows and that its ?timeout= was valid (timeoutErr, from
// requestDeadline), and runs the verb. Verb semantics live in one file each
// (get.go, list.go, watch.go, create.go, update.go,
// patch.go, delete.go, review.go); errors become Status responses here.
func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, rec *request.Record, info requestInfo, timeoutErr error) {
	res, ok := s.cfg.Resources.Lookup(info.group, info.version, info.resource)
	if !ok {
		s.writeError(w, r, resourceNotServed())
		return
	}
	err := checkScope(res, info)
	if err == nil {
		err = timeoutErr
	}
	if err == nil {
		err = s.serveVerb(w, r, rec, res, info)
	}
	if err != nil {
		s.writeError(w, r, err)
	}
}

func checkScope(res *registry.Resource, info requestInfo) error {
	switch {
	case info.subresource != "" && !servesSubresource(res, info.subresource):
		return apierrors.NewNotFound(res.GroupResource(), info.name)
	case !res.Namespaced && info.namespace != "":
		return apierrors.NewNotFound(res.GroupResource(), info.name)
	case res.Namespaced && info.namespace == "" && info.name != "":
		return apierrors.NewNotFound(res.GroupResource(), info.name)
	case info.subresource == "status" && info.verb != "get" && info.verb != "update" && info.verb != "patch":
		return apierrors.NewMethodNotSupported(res.GroupResource(), info.verb)
	case info.subresource == "finalize" && info.verb != "update":
		return apierrors.NewMethodNotSupported(res.GroupResource(), info.verb)
	}
	return nil
}

// servesSubresource tells whether res has the subresource: status, or a
// namespace's finalize (through which its spec.finalizers change).
func servesSubresource(res *registry.Resource, sub string) bool {
	switch sub {
	case "status":
		return res.StatusSubresource
	case "finalize":
		return res.FinalizeSubresource
	}
	return false
}

func (s *Server) serveVerb(w http.ResponseWriter, r *http.Request, rec *request.Record, res *registry.Resource, info requestInfo) error {
	if res.Review != nil {
		// A review is answered, never stored: create is its only verb.
		if info.verb != "create" || info.name != "" {
			return apierrors.NewMethodNotSupported(res.GroupResource(), info.verb)
		}
		return s.review(w, r, rec, res)
	}
	switch info.verb {
	case "get":
		return s.get(w, r, res, info)
	case "list":
		return s.list(w, r, res, info)
	case "watch":
		return s.watch(w, r, res, info)
	case "create":
		if info.name != "" {
			return apierrors.NewMethodNotSupported(res.GroupResource(), "create")
		}
		return s.create(w, r, res, info)
	case "update":
		return s.update(w, r, res, info)
	case "patch":
		return s.patch(w, r, res, info)
	case "delete":
		return s.delete(w, r, res, info)
	case "deletecollection":
		if info.namespace == "" && res.Namespaced {
			return apierrors.NewMethodNotSupported(res.GroupResource(), "deletecollection")
		}
		return s.deleteCollection(w, r, res, info)
	}
	return apierrors.NewMethodNotSupported(res.GroupResource(), info.verb)
}
