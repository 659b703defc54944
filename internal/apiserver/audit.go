package apiserver

import (
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"sigs.k8s.io/yaml"

	"github.com/leasehold/leasehold/internal/audit"
	"github.com/leasehold/leasehold/internal/request"
)

// AuditIDHeader carries a request's audit ID, both ways: a client (or a
// proxy in front) may set it, and every response repeats it, as in
// kube-apiserver.
const AuditIDHeader = "Audit-ID"

// auditIDKey is AuditIDHeader in the canonical form request header maps
// are keyed by: Header.Get(AuditIDHeader) canonicalized the name, one
// allocation and about a third of assignAuditID's CPU on every request
// (TestAuditIDKeyIsCanonical).
const auditIDKey = "Audit-Id"

// maxAuditIDLength bounds a client-chosen audit ID, as kube-apiserver
// does, so that a hostile header cannot bloat every audit line.
const maxAuditIDLength = 64

// assignAuditID gives the request its audit ID: the client's Audit-ID
// header when it sent a usable one, a new UUID otherwise. The header goes
// back on the response before any stage can answer, so even a 401 or 429
// names the event it was logged under.
func assignAuditID(w http.ResponseWriter, r *http.Request, rec *request.Record) {
	var id string
	if v := r.Header[auditIDKey]; len(v) > 0 {
		id = v[0]
	}
	if id == "" || len(id) > maxAuditIDLength {
		id = string(uuid.NewUUID())
	}
	rec.AuditID = id
	w.Header()[AuditIDHeader] = []string{id}
}

// beginAudit is the audit stage, between authentication and the limits, as
// kube-apiserver's audit filter sits between its authentication and its
// in-flight limits: the policy decides the request's level and, unless it
// is None, the RequestReceived event goes out. A request that failed
// authentication is audited too (authenticated=false), as kube-apiserver
// does, after its 401 was written: one ResponseStarted event naming the
// credentials tried.
//
// The audit.Request lives on the pipeline's status recorder, which logs
// the response object and a watch's ResponseStarted as they are written,
// and, when the level is not None, in the context for the verbs that log
// request bodies. A request the policy leaves out (the default policy's
// node lease renewals) costs one policy evaluation and no allocation.
func (s *Server) beginAudit(w *statusRecorder, r *http.Request, rec *request.Record, authenticated bool) *http.Request {
	if s.cfg.Auditor == nil {
		return r
	}
	var q *audit.Request
	if authenticated {
		q = s.cfg.Auditor.Begin(r, rec)
	} else {
		q = s.cfg.Auditor.BeginFailedAuthentication(r, rec)
	}
	if q == nil {
		return r
	}
	w.audit = q
	return r.WithContext(audit.WithRequest(r.Context(), q))
}

// auditOf is the audit.Request of the pipeline writer w, nil when w is not
// the pipeline's or the request is not audited (every audit.Request method
// accepts nil).
func auditOf(w http.ResponseWriter) *audit.Request {
	if sw, ok := w.(*statusRecorder); ok {
		return sw.audit
	}
	return nil
}

// logDeleteOptions logs a delete's DeleteOptions body as kube-apiserver
// does: in the internal version it decodes them to, so that the event's
// requestObject reads apiVersion meta.k8s.io/__internal (the seed's node
// deletion shows it). Options given only as query parameters are not
// logged, as there.
func logDeleteOptions(r *http.Request, o *metav1.DeleteOptions) {
	q := audit.RequestFrom(r.Context())
	if q == nil {
		return
	}
	logged := *o
	logged.TypeMeta = metav1.TypeMeta{Kind: "DeleteOptions", APIVersion: "meta.k8s.io/" + runtime.APIVersionInternal}
	q.LogRequestObject(&logged)
}

// logPatch logs a patch request's body, from level Request on; an apply
// patch in YAML is logged as the JSON it converts to (an event is JSON).
func logPatch(r *http.Request, pt types.PatchType, body []byte) {
	q := audit.RequestFrom(r.Context())
	if l := q.Level(); l == auditv1.LevelNone || l == auditv1.LevelMetadata {
		return
	}
	if pt == types.ApplyYAMLPatchType {
		j, err := yaml.YAMLToJSON(body)
		if err != nil {
			return // the patch stage answers the malformed body
		}
		body = j
	}
	q.LogRequestPatch(body)
}
