package event

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Length limits kube-apiserver puts on new-style (eventTime) events.
const (
	reportingInstanceLengthLimit = 128
	actionLengthLimit            = 128
	reasonLengthLimit            = 128
	noteLengthLimit              = 1024
)

// Validate checks an event as kube-apiserver does for a core v1 create or
// update (its "legacy" validation; v1 skips the stricter events.k8s.io
// rules for backwards compatibility). Old-style events (no eventTime) only
// need a namespace consistent with the involved object; new-style ones also
// need reportingComponent, reportingInstance, action and reason.
func Validate(e *corev1.Event) field.ErrorList {
	var errs field.ErrorList
	involvedNS := field.NewPath("involvedObject", "namespace")
	mismatch := func() {
		errs = append(errs, field.Invalid(involvedNS, e.InvolvedObject.Namespace, "does not match event.namespace"))
	}
	if e.EventTime.IsZero() {
		switch {
		case e.InvolvedObject.Namespace == "":
			// Events about cluster-scoped objects live in "default" (or nowhere).
			if e.Namespace != metav1.NamespaceNone && e.Namespace != metav1.NamespaceDefault {
				mismatch()
			}
		case e.Namespace != e.InvolvedObject.Namespace:
			mismatch()
		}
	} else {
		if e.InvolvedObject.Namespace == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
			mismatch()
		}
		// core v1 names the field reportingComponent in its messages.
		rc := field.NewPath("reportingComponent")
		if e.ReportingController == "" {
			errs = append(errs, field.Required(rc, ""))
		}
		for _, msg := range validation.IsQualifiedName(e.ReportingController) {
			errs = append(errs, field.Invalid(rc, e.ReportingController, msg))
		}
		errs = append(errs, requiredWithLimit(field.NewPath("reportingInstance"), e.ReportingInstance, reportingInstanceLengthLimit)...)
		errs = append(errs, requiredWithLimit(field.NewPath("action"), e.Action, actionLengthLimit)...)
		errs = append(errs, requiredWithLimit(field.NewPath("reason"), e.Reason, reasonLengthLimit)...)
		if len(e.Message) > noteLengthLimit {
			errs = append(errs, field.Invalid(field.NewPath("message"), "", fmt.Sprintf("can have at most %v characters", noteLengthLimit)))
		}
	}
	for _, msg := range validation.IsDNS1123Subdomain(e.Namespace) {
		errs = append(errs, field.Invalid(field.NewPath("namespace"), e.Namespace, msg))
	}
	return errs
}

// requiredWithLimit is upstream's pair of checks on a new-style event's
// string fields; like upstream, the Invalid error does not echo the value.
func requiredWithLimit(p *field.Path, v string, limit int) field.ErrorList {
	var errs field.ErrorList
	if v == "" {
		errs = append(errs, field.Required(p, ""))
	}
	if len(v) > limit {
		errs = append(errs, field.Invalid(p, "", fmt.Sprintf("can have at most %v characters", limit)))
	}
	return errs
}
