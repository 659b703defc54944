// Package request holds the record that one API request carries through the
// request pipeline (internal/apiserver): what the request asks for
// (Attributes: who, which verb, which resource or path) and what became of it
// (audit ID, authorization decision, response code). Stages fill it in order
// (request info, authenticate, authorize, admit, verb, respond), and later
// readers (audit, metrics, logs) read it instead of parsing the request again.
//
// Invariants:
//   - Attributes are filled before authorization and never change after it:
//     what was authorized is what is executed and audited.
//   - A Record belongs to one request; it is never shared between goroutines
//     except the request's own handler and the code it calls synchronously.
package request

import (
	"context"
	"time"
)

// Well-known user and group names, as Kubernetes spells them.
const (
	AnonymousUser         = "system:anonymous"
	AllAuthenticated      = "system:authenticated"
	AllUnauthenticated    = "system:unauthenticated"
	SystemPrivilegedGroup = "system:masters"
	NodesGroup            = "system:nodes"
	NodeUserPrefix        = "system:node:"
	// APIServerUser is the identity of the server's own loopback requests
	// that no controller identity was given for.
	APIServerUser = "system:apiserver"
	// ServiceAccountPrefix starts a service account's user name:
	// system:serviceaccount:<namespace>:<name>.
	ServiceAccountPrefix = "system:serviceaccount:"
)

// User is an authenticated (or anonymous) caller, as Kubernetes' user.Info.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// InGroup reports whether u is a member of group.
func (u *User) InGroup(group string) bool {
	for _, g := range u.Groups {
		if g == group {
			return true
		}
	}
	return false
}

// Attributes are what authorization and admission judge: the caller and what
// the request asks for, as Kubernetes' authorizer.Attributes.
type Attributes struct {
	User User
	// ResourceRequest is true for /api/... and /apis/... requests that name
	// a resource; false for every other path (discovery, /healthz, /metrics).
	ResourceRequest bool
	// Path is the URL path (what non-resource rules match).
	Path string
	// Verb is the Kubernetes verb for resource requests (get, list, watch,
	// create, update, patch, delete, deletecollection) and the lower-case
	// HTTP method for non-resource requests (get, post, put, ...).
	Verb        string
	APIGroup    string
	APIVersion  string
	Namespace   string
	Resource    string
	Subresource string
	Name        string
	// FieldSelector and LabelSelector are the raw selectors of a list or
	// watch (the Node authorizer lets a node list only its own Node).
	FieldSelector string
	LabelSelector string
}

// Record is one request's record through the pipeline.
type Record struct {
	Attributes
	// AuditID identifies the request in the audit log and the Audit-ID
	// response header.
	AuditID string
	// Received is when the request arrived.
	Received time.Time
	// Decision is "allow" or "forbid" once authorization has run, and
	// Reason the authorizer's reason (both audit annotations).
	Decision string
	Reason   string
	// Code is the HTTP status code of the response, once written.
	Code int
}

type recordKey struct{}

// WithRecord returns a context carrying rec.
func WithRecord(ctx context.Context, rec *Record) context.Context {
	return context.WithValue(ctx, recordKey{}, rec)
}

// RecordFrom returns the record ctx carries, or nil.
func RecordFrom(ctx context.Context) *Record {
	rec, _ := ctx.Value(recordKey{}).(*Record)
	return rec
}
