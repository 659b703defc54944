// Package chain builds the server's authorizer from --authorization-mode, as
// kube-apiserver does: the system:masters group first, then each mode in the
// order given, the first Allow or Deny winning (authz.Union). It lives apart
// from package authz because it builds the Node authorizer, whose package
// imports authz.
package chain

import (
	"fmt"
	"slices"
	"strings"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Mode is one --authorization-mode value.
type Mode string

// The modes Leasehold implements, spelled as kube-apiserver's flag.
const (
	ModeNode        Mode = "Node"
	ModeRBAC        Mode = "RBAC"
	ModeAlwaysAllow Mode = "AlwaysAllow"
	ModeAlwaysDeny  Mode = "AlwaysDeny"
)

// Choices lists the modes Leasehold implements, for the flag's help text.
func Choices() []string {
	return []string{string(ModeAlwaysAllow), string(ModeAlwaysDeny), string(ModeNode), string(ModeRBAC)}
}

// DefaultModes is the flag's default: nodes through the Node authorizer,
// everyone else through RBAC.
func DefaultModes() []string { return []string{string(ModeNode), string(ModeRBAC)} }

// ParseModes validates the flag's values (a string slice flag, as
// kube-apiserver's) and returns them in order. The errors are
// kube-apiserver's: no mode, an unknown mode, a mode given twice; all of them
// are reported at once.
func ParseModes(values []string) ([]Mode, error) {
	var errs []error
	if len(values) == 0 {
		errs = append(errs, fmt.Errorf("at least one authorization-mode must be passed"))
	}
	choices := Choices()
	modes := make([]Mode, 0, len(values))
	for _, v := range values {
		switch {
		case slices.Contains(choices, v):
			modes = append(modes, Mode(v))
		case v == "ABAC" || v == "Webhook":
			// Valid for kube-apiserver, so not "not a valid mode": a flag
			// copied from a kube-apiserver manifest should say what is wrong.
			errs = append(errs, fmt.Errorf("authorization-mode %q is not supported by leasehold (supported: %s)", v, strings.Join(choices, ",")))
		default:
			errs = append(errs, fmt.Errorf("authorization-mode %q is not a valid mode", v))
		}
	}
	if len(values) != sets.New(values...).Len() {
		errs = append(errs, fmt.Errorf("authorization-mode %q has mode specified more than once", values))
	}
	if err := utilerrors.NewAggregate(errs); err != nil {
		return nil, err
	}
	return modes, nil
}
