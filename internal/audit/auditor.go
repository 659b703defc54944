package audit

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/leasehold/leasehold/internal/request"
)

// Config is what an Auditor needs.
type Config struct {
	// Policy decides each request's level; required.
	Policy *Policy
	// Sink receives the events; required.
	Sink Sink
	// Encode turns a request or response object into the JSON logged as
	// requestObject/responseObject. The object must carry its apiVersion
	// and kind. Nil means encoding/json.
	Encode func(runtime.Object) ([]byte, error)
	// Now is the clock for stage timestamps; nil means time.Now.
	Now func() time.Time
}

// Auditor starts one Request per audited API request. It holds no
// per-request state and is safe for concurrent use.
type Auditor struct {
	policy *Policy
	sink   Sink
	encode func(runtime.Object) ([]byte, error)
	now    func() time.Time
}

// New returns an Auditor for c.
func New(c Config) *Auditor {
	a := &Auditor{policy: c.Policy, sink: c.Sink, encode: c.Encode, now: c.Now}
	if a.encode == nil {
		a.encode = func(obj runtime.Object) ([]byte, error) { return json.Marshal(obj) }
	}
	if a.now == nil {
		a.now = time.Now
	}
	return a
}

// Annotation keys the authorization stage's outcome is logged under, as
// kube-apiserver's authorization filter sets them.
const (
	DecisionAnnotation = "authorization.k8s.io/decision"
	ReasonAnnotation   = "authorization.k8s.io/reason"
)

// kube-apiserver cuts user agents longer than this and marks the cut.
const (
	maxUserAgentLength      = 1024
	userAgentTruncateSuffix = "...TRUNCATED"
)

// Begin starts auditing an authenticated request: call it once rec's
// Attributes (user, verb, resource) are filled, before authorization, as
// kube-apiserver's audit filter runs between authentication and
// authorization. It evaluates the policy and, unless the level is None,
// emits the RequestReceived stage. It returns nil for level None; every
// Request method accepts a nil receiver.
func (a *Auditor) Begin(r *http.Request, rec *request.Record) *Request {
	q := a.start(r, rec)
	if q != nil {
		q.emit(auditv1.StageRequestReceived, q.ev.RequestReceivedTimestamp)
	}
	return q
}

// BeginFailedAuthentication audits a request that failed authentication
// (answered 401), as kube-apiserver does: no RequestReceived stage, the
// user empty, the response status's message naming the credentials tried,
// and one ResponseStarted event at End instead of ResponseComplete. rec's
// Attributes other than the user must be filled.
func (a *Auditor) BeginFailedAuthentication(r *http.Request, rec *request.Record) *Request {
	q := a.start(r, rec)
	if q != nil {
		q.failedAuthn = true
		q.ev.ResponseStatus = &metav1.Status{Message: attemptedAuthentication(r)}
	}
	return q
}

// start evaluates the policy and fills the event's metadata.
func (a *Auditor) start(r *http.Request, rec *request.Record) *Request {
	cfg := a.policy.Evaluate(&rec.Attributes)
	if cfg.Level == auditv1.LevelNone {
		return nil
	}
	q := &Request{a: a, cfg: cfg, longRunning: rec.Verb == "watch", resource: rec.ResourceRequest}
	ev := &q.ev
	ev.Kind, ev.APIVersion = "Event", auditv1.SchemeGroupVersion.String()
	ev.Level = cfg.Level
	ev.AuditID = types.UID(rec.AuditID)
	ev.RequestURI = r.URL.RequestURI()
	ev.Verb = rec.Verb
	ev.User = userInfo(&rec.User)
	ev.UserAgent = r.UserAgent()
	if len(ev.UserAgent) > maxUserAgentLength {
		ev.UserAgent = ev.UserAgent[:maxUserAgentLength] + userAgentTruncateSuffix
	}
	ips := utilnet.SourceIPs(r)
	ev.SourceIPs = make([]string, len(ips))
	for i, ip := range ips {
		ev.SourceIPs[i] = ip.String()
	}
	if rec.ResourceRequest {
		ev.ObjectRef = &auditv1.ObjectReference{
			Resource: rec.Resource, Namespace: rec.Namespace, Name: rec.Name,
			APIGroup: rec.APIGroup, APIVersion: rec.APIVersion, Subresource: rec.Subresource,
		}
	}
	received := rec.Received
	if received.IsZero() {
		received = a.now()
	}
	ev.RequestReceivedTimestamp = metav1.NewMicroTime(received)
	return q
}

// userInfo is u as the event's user.
func userInfo(u *request.User) authnv1.UserInfo {
	info := authnv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		info.Extra = make(map[string]authnv1.ExtraValue, len(u.Extra))
		for k, v := range u.Extra {
			info.Extra[k] = v
		}
	}
	return info
}

// attemptedAuthentication is the message kube-apiserver logs for a failed
// authentication: the kinds of credentials the request carried.
func attemptedAuthentication(r *http.Request) string {
	var methods []string
	if _, _, ok := r.BasicAuth(); ok {
		methods = append(methods, "basic")
	}
	if parts := strings.Split(strings.TrimSpace(r.Header.Get("Authorization")), " "); len(parts) > 1 && strings.ToLower(parts[0]) == "bearer" {
		methods = append(methods, "bearer")
	}
	if r.URL.Query().Get("access_token") != "" {
		methods = append(methods, "access_token")
	}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		methods = append(methods, "x509")
	}
	if len(methods) == 0 {
		return "Authentication failed, no credentials provided"
	}
	return "Authentication failed, attempted: " + strings.Join(methods, ", ")
}
