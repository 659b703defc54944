package audit

import auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

// Sink receives finished events: package logbackend's Backend, or a test's
// collector.
type Sink interface {
	// ProcessEvents takes the events over (the caller never modifies them
	// again) and reports whether all of them were, or will be, written.
	ProcessEvents(events ...*auditv1.Event) bool
}
