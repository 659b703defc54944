// Package admission holds the checks that run on a write after it is
// authorized and before it is stored, with the object in hand, as
// kube-apiserver's admission plugins do (NodeRestriction, NamespaceLifecycle,
// RBAC's escalation check).
package admission

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/leasehold/leasehold/internal/request"
)

// Operation is the kind of write being admitted.
type Operation string

// The operations, spelled as Kubernetes' admission.Operation.
const (
	Create Operation = "CREATE"
	Update Operation = "UPDATE"
	Delete Operation = "DELETE"
)

// Attributes describe one write to admit.
type Attributes struct {
	*request.Attributes
	Operation Operation
	// Object is the object to be written (nil on Delete); OldObject the
	// stored one (nil on Create). Plugins must not change either.
	Object    runtime.Object
	OldObject runtime.Object
	DryRun    bool
}

// Interface is one admission check. It returns nil to admit, or the error
// the client gets (an apimachinery StatusError: Forbidden, Invalid, ...).
type Interface interface {
	Admit(ctx context.Context, a *Attributes) error
}

// Chain runs each check in order; the first refusal wins.
type Chain []Interface

// Admit implements Interface.
func (c Chain) Admit(ctx context.Context, a *Attributes) error {
	for _, p := range c {
		if err := p.Admit(ctx, a); err != nil {
			return err
		}
	}
	return nil
}
