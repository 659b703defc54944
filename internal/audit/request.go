package audit

import (
	"fmt"
	"maps"
	"net/http"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/leasehold/leasehold/internal/request"
)

// Request is one API request's audit event in the making. It belongs to
// the request's goroutine, like the request.Record it mirrors. A nil
// *Request (level None) accepts every call and does nothing.
type Request struct {
	a   *Auditor
	cfg RequestConfig
	ev  auditv1.Event
	// longRunning requests (watches) get a ResponseStarted stage.
	longRunning bool
	// resource is whether bodies may be logged (resource requests only).
	resource bool
	// failedAuthn requests end with ResponseStarted, not ResponseComplete.
	failedAuthn bool
	started     bool
	ended       bool
}

// Level is the request's audit level (None for a nil Request): the pipeline
// need keep request or response objects for Log* only from Request or
// RequestResponse on.
func (q *Request) Level() auditv1.Level {
	if q == nil {
		return auditv1.LevelNone
	}
	return q.cfg.Level
}

// SetImpersonatedUser records the user the request acts as when its
// authenticated user impersonates another.
func (q *Request) SetImpersonatedUser(u request.User) {
	if q == nil {
		return
	}
	info := userInfo(&u)
	q.ev.ImpersonatedUser = &info
}

// AddAnnotation adds an annotation to the events still to come; the first
// value for a key wins, as in kube-apiserver.
func (q *Request) AddAnnotation(key, value string) {
	if q == nil {
		return
	}
	if q.ev.Annotations == nil {
		q.ev.Annotations = map[string]string{}
	}
	if _, ok := q.ev.Annotations[key]; !ok {
		q.ev.Annotations[key] = value
	}
}

// LogRequestObject records the decoded object a create or update (or the
// DeleteOptions a delete) carried, before the server changes it: its uid
// and resourceVersion complete the objectRef at every level, and from
// level Request on it is logged as requestObject.
func (q *Request) LogRequestObject(obj runtime.Object) {
	if q == nil || obj == nil {
		return
	}
	if m, err := meta.Accessor(obj); err == nil && q.ev.ObjectRef != nil {
		ref := q.ev.ObjectRef
		if ref.Namespace == "" {
			ref.Namespace = m.GetNamespace()
		}
		if ref.Name == "" {
			ref.Name = m.GetName()
		}
		if ref.UID == "" {
			ref.UID = m.GetUID()
		}
		if ref.ResourceVersion == "" {
			ref.ResourceVersion = m.GetResourceVersion()
		}
	}
	if q.resource && q.cfg.Level != auditv1.LevelMetadata {
		q.ev.RequestObject = q.encode(obj)
	}
}

// LogRequestPatch records a patch request's body as sent (the patch, not
// the patched object), from level Request on. It must be JSON (JSON patch,
// merge patch, strategic merge or apply patch); the pipeline converts a
// YAML apply patch first.
func (q *Request) LogRequestPatch(patch []byte) {
	if q == nil || !q.resource || q.cfg.Level == auditv1.LevelMetadata {
		return
	}
	q.ev.RequestObject = &runtime.Unknown{Raw: append([]byte(nil), patch...), ContentType: runtime.ContentTypeJSON}
}

// LogResponseObject records what the response carries: a metav1.Status
// (an error, or a delete's success) becomes the responseStatus at every
// level, and at RequestResponse the object is logged as responseObject.
// Call it before the response is written, with the object as encoded
// (apiVersion and kind set).
func (q *Request) LogResponseObject(obj runtime.Object) {
	if q == nil || obj == nil {
		return
	}
	if s, ok := obj.(*metav1.Status); ok {
		// The bounded fields only, as kube-apiserver copies them.
		q.ev.ResponseStatus = &metav1.Status{Status: s.Status, Message: s.Message, Reason: s.Reason, Details: s.Details, Code: s.Code}
	}
	if q.resource && q.cfg.Level == auditv1.LevelRequestResponse {
		q.ev.ResponseObject = q.encode(obj)
	}
}

// ResponseStarted records that a long-running response (a watch) sent its
// headers with code: the ResponseStarted stage. Other requests ignore it.
func (q *Request) ResponseStarted(code int) {
	if q == nil || !q.longRunning || q.started {
		return
	}
	q.setCode(code)
	q.started = true
	q.emit(auditv1.StageResponseStarted, metav1.NewMicroTime(q.a.now()))
}

// End finishes the request with rec's outcome (Decision, Reason, Code) and
// emits its last stage: ResponseComplete, or ResponseStarted for a failed
// authentication. A zero Code means the client went away before an answer,
// logged as kube-apiserver does ("Connection closed early").
func (q *Request) End(rec *request.Record) {
	if q == nil || q.ended {
		return
	}
	q.ended = true
	q.annotateDecision(rec)
	if rec.Code == 0 && q.ev.ResponseStatus == nil {
		q.ev.ResponseStatus = &metav1.Status{Code: http.StatusOK, Status: metav1.StatusSuccess, Message: "Connection closed early"}
		if q.longRunning && !q.started {
			q.started = true
			q.emit(auditv1.StageResponseStarted, metav1.NewMicroTime(q.a.now()))
		}
	} else if rec.Code != 0 {
		q.setCode(rec.Code)
	}
	if q.failedAuthn {
		q.emitLast(auditv1.StageResponseStarted, metav1.NewMicroTime(q.a.now()))
		return
	}
	q.emitLast(auditv1.StageResponseComplete, metav1.NewMicroTime(q.a.now()))
}

// Panic finishes a request whose handler panicked with v: a 500 status and
// the Panic stage instead of ResponseComplete.
func (q *Request) Panic(rec *request.Record, v any) {
	if q == nil || q.ended {
		return
	}
	q.ended = true
	q.annotateDecision(rec)
	q.ev.ResponseStatus = &metav1.Status{
		Code: http.StatusInternalServerError, Status: metav1.StatusFailure,
		Reason: metav1.StatusReasonInternalError, Message: fmt.Sprintf("APIServer panic'd: %v", v),
	}
	q.emitLast(auditv1.StagePanic, metav1.NewMicroTime(q.a.now()))
}

// annotateDecision adds the authorization annotations: the decision once
// authorization decided, the reason also when it failed with an error.
func (q *Request) annotateDecision(rec *request.Record) {
	if rec.Decision != "" {
		q.AddAnnotation(DecisionAnnotation, rec.Decision)
	}
	if rec.Decision != "" || rec.Reason != "" {
		q.AddAnnotation(ReasonAnnotation, rec.Reason)
	}
}

func (q *Request) setCode(code int) {
	if q.ev.ResponseStatus == nil {
		q.ev.ResponseStatus = &metav1.Status{}
	}
	q.ev.ResponseStatus.Code = int32(code)
}

// encode returns obj as logged, without managed fields if the policy says
// so; an object that fails to encode is left out of the event.
func (q *Request) encode(obj runtime.Object) *runtime.Unknown {
	if q.cfg.OmitManagedFields {
		if m, err := meta.Accessor(obj); err == nil && len(m.GetManagedFields()) > 0 {
			obj = obj.DeepCopyObject()
			if m, err := meta.Accessor(obj); err == nil {
				m.SetManagedFields(nil)
			}
		}
	}
	raw, err := q.a.encode(obj)
	if err != nil {
		return nil
	}
	return &runtime.Unknown{Raw: raw, ContentType: runtime.ContentTypeJSON}
}

// emit hands a copy of the event at stage to the sink, unless the policy
// omits the stage. The copy owns its mutable parts, so later stages never
// change an event a sink holds.
// emitLast emits the request's last event. Nothing changes q.ev after it,
// so the sink gets it without the copy emit makes (at Metadata level,
// copying the event, its objectRef, status and annotations was about a
// fifth of the pipeline's audit allocations).
func (q *Request) emitLast(stage auditv1.Stage, at metav1.MicroTime) {
	if containsStage(q.cfg.OmitStages, stage) {
		return
	}
	q.ev.Stage, q.ev.StageTimestamp = stage, at
	q.a.sink.ProcessEvents(&q.ev)
}

func (q *Request) emit(stage auditv1.Stage, at metav1.MicroTime) {
	if containsStage(q.cfg.OmitStages, stage) {
		return
	}
	ev := q.ev
	ev.Stage = stage
	ev.StageTimestamp = at
	if ev.ObjectRef != nil {
		ref := *ev.ObjectRef
		ev.ObjectRef = &ref
	}
	if ev.ResponseStatus != nil {
		s := *ev.ResponseStatus
		ev.ResponseStatus = &s
	}
	ev.Annotations = maps.Clone(ev.Annotations)
	q.a.sink.ProcessEvents(&ev)
}
