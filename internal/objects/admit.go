package objects

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/admission"
	"github.com/leasehold/leasehold/internal/request"
)

// admit runs Config.Admission on one write, after the object is validated
// and before it is stored (creates, updates, patches once applied, deletes
// and each item of a deletecollection). obj is nil on Delete, old on
// Create. Its error goes to the client as it is.
//
// The attributes are the record's, which authorization judged, unless the
// object is not the one the URL named (a create names it in the body, a
// deletecollection item has its own name): then a copy names the object.
func (s *Store) admit(ctx context.Context, op admission.Operation, namespace, name string, obj, old runtime.Object, dryRun bool) error {
	if s.admission == nil {
		return nil
	}
	// The record's own attributes when there is a record: an empty
	// Attributes made up front was a renewal's 170 B allocation even then.
	var attrs *request.Attributes
	if rec := request.RecordFrom(ctx); rec != nil {
		attrs = &rec.Attributes
	} else {
		attrs = &request.Attributes{}
	}
	if attrs.Name != name || (attrs.Namespace != namespace && namespace != "") {
		named := *attrs
		named.Name, named.Namespace = name, namespace
		attrs = &named
	}
	return s.admission.Admit(ctx, &admission.Attributes{Attributes: attrs, Operation: op, Object: obj, OldObject: old, DryRun: dryRun})
}
