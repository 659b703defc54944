package apiserver

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/request"
)

// Authorization decisions as the record (and the audit annotation
// authorization.k8s.io/decision) spells them.
const (
	DecisionAllow  = "allow"
	DecisionForbid = "forbid"
	// reasonError is the reason recorded when the authorizer failed.
	reasonError = "internal error"
)

// authorize is the pipeline's fourth stage: Config.Authorizer judges the
// record's Attributes. Allow continues; Deny and NoOpinion get Kubernetes'
// 403 Forbidden Status; an authorizer error is a 500. As in kube-apiserver,
// the decision is checked before the error: an authorizer may allow despite
// an error in an unrelated rule.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, rec *request.Record) bool {
	return s.allowed(w, r, rec, &rec.Attributes)
}

// allowed asks Config.Authorizer about a, records the decision in rec, and
// on a refusal answers it: 403 with the reason, or 500 when the authorizer
// failed. a is the request's own Attributes, or one part of an
// impersonation (impersonate.go).
func (s *Server) allowed(w http.ResponseWriter, r *http.Request, rec *request.Record, a *request.Attributes) bool {
	decision, reason, err := s.cfg.Authorizer.Authorize(r.Context(), a)
	if decision == authz.DecisionAllow {
		rec.Decision, rec.Reason = DecisionAllow, reason
		return true
	}
	rec.Decision = DecisionForbid
	if err != nil {
		rec.Reason = reasonError
		s.logger.Error("authorization failed", "user", a.User.Name, "verb", a.Verb, "path", r.URL.Path, "err", err)
		s.writeError(w, r, apierrors.NewInternalError(errors.New(reasonError)))
		return false
	}
	rec.Reason = reason
	s.writeError(w, r, forbidden(a, reason))
	return false
}

// forbidden is the 403 kube-apiserver answers a refused request with
// (responsewriters.ForbiddenStatusError): apimachinery's Forbidden error for
// the resource and name, whose cause says who cannot do what, followed by
// the authorizer's reason when it gave one. Only the generated part is
// HTML-escaped, so that the message never reads as markup.
func forbidden(a *request.Attributes, reason string) error {
	msg := htmlEscaper.Replace(forbiddenMessage(a))
	if reason != "" {
		msg += ": " + reason
	}
	return apierrors.NewForbidden(schema.GroupResource{Group: a.APIGroup, Resource: a.Resource}, a.Name, errors.New(msg))
}

var htmlEscaper = strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;")

func forbiddenMessage(a *request.Attributes) string {
	if !a.ResourceRequest {
		return fmt.Sprintf("User %q cannot %s path %q", a.User.Name, a.Verb, a.Path)
	}
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	if a.Namespace != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", a.User.Name, a.Verb, resource, a.APIGroup, a.Namespace)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", a.User.Name, a.Verb, resource, a.APIGroup)
}
