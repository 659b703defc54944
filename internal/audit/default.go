package audit

import (
	_ "embed" // the default policy ships inside the binary
	"fmt"
)

// defaultPolicyYAML is default-policy.yaml; docs/audit-policy.yaml is the
// same file for readers (TestDocsPolicyIsDefault keeps them equal).
//
//go:embed default-policy.yaml
var defaultPolicyYAML string

// DefaultPolicyYAML returns the text of the default policy for a lease
// service, with its comments: what it keeps and what it leaves out.
func DefaultPolicyYAML() string { return defaultPolicyYAML }

// DefaultPolicy returns the default policy, parsed. It cannot fail for the
// embedded file (TestDefaultPolicy parses it); an error is returned rather
// than a panic all the same.
func DefaultPolicy() (*Policy, error) {
	p, _, err := ParsePolicy([]byte(defaultPolicyYAML))
	if err != nil {
		return nil, fmt.Errorf("default audit policy: %w", err)
	}
	return p, nil
}
