package audit

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	auditvalidation "k8s.io/apiserver/pkg/apis/audit/validation"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/leasehold/leasehold/internal/request"
)

// Policy is a loaded and validated audit.k8s.io/v1 Policy, ready to
// evaluate. It is immutable, so one Policy serves all requests.
type Policy struct {
	rules             []auditv1.PolicyRule
	omitStages        []auditv1.Stage
	omitManagedFields bool
}

// RequestConfig is what a Policy decides for one request.
type RequestConfig struct {
	Level             auditv1.Level
	OmitStages        []auditv1.Stage
	OmitManagedFields bool
}

// LoadPolicyFile reads and parses the policy at path (--audit-policy-file).
// Warnings name fields a lenient decoder ignored, as kube-apiserver logs
// them; the policy is still used.
func LoadPolicyFile(path string) (*Policy, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("audit policy: %w", err)
	}
	p, warnings, err := ParsePolicy(data)
	if err != nil {
		return nil, nil, fmt.Errorf("audit policy %s: %w", path, err)
	}
	return p, warnings, nil
}

// ParsePolicy parses an audit.k8s.io/v1 Policy in YAML or JSON. Like
// kube-apiserver it decodes strictly first and, when only unknown or
// duplicate fields fail, decodes leniently and returns the strict error as
// a warning. Every error names the line of the offending rule or field.
func ParsePolicy(data []byte) (*Policy, []string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil, fmt.Errorf("parsing YAML: %w", err)
	}
	var (
		pol      auditv1.Policy
		warnings []string
	)
	if strictErr := sigsyaml.UnmarshalStrict(data, &pol); strictErr != nil {
		pol = auditv1.Policy{}
		if err := sigsyaml.Unmarshal(data, &pol); err != nil {
			return nil, nil, decodeError(&doc, err)
		}
		warnings = append(warnings, fmt.Sprintf("audit policy contains errors, decoded leniently: %v", strictErr))
	}
	if pol.APIVersion != auditv1.SchemeGroupVersion.String() || pol.Kind != "Policy" {
		return nil, nil, fmt.Errorf("line %d: want apiVersion %s and kind Policy, got apiVersion %q and kind %q",
			lineOf(&doc, []string{"apiVersion"}), auditv1.SchemeGroupVersion, pol.APIVersion, pol.Kind)
	}
	var internal auditinternal.Policy
	if err := auditv1.Convert_v1_Policy_To_audit_Policy(&pol, &internal, nil); err != nil {
		return nil, nil, fmt.Errorf("converting policy: %w", err)
	}
	if errs := auditvalidation.ValidatePolicy(&internal); len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = fmt.Sprintf("line %d: %v", lineOf(&doc, pathTokens(e.Field)), e)
		}
		return nil, nil, errors.New(strings.Join(msgs, "; "))
	}
	if len(pol.Rules) == 0 {
		// kube-apiserver's own words for it.
		return nil, nil, fmt.Errorf("line %d: loaded illegal policy with 0 rules", lineOf(&doc, []string{"rules"}))
	}
	p := &Policy{omitStages: pol.OmitStages, omitManagedFields: pol.OmitManagedFields, rules: pol.Rules}
	for i := range p.rules {
		p.rules[i].OmitStages = unionStages(pol.OmitStages, p.rules[i].OmitStages)
	}
	return p, warnings, nil
}

// Evaluate returns the first matching rule's level, stages to omit (the
// policy's and the rule's) and managed-fields choice (the rule's when it
// sets one); no match is level None with the policy's defaults.
func (p *Policy) Evaluate(attrs *request.Attributes) RequestConfig {
	for i := range p.rules {
		r := &p.rules[i]
		if ruleMatches(r, attrs) {
			omit := p.omitManagedFields
			if r.OmitManagedFields != nil {
				omit = *r.OmitManagedFields
			}
			return RequestConfig{Level: r.Level, OmitStages: r.OmitStages, OmitManagedFields: omit}
		}
	}
	return RequestConfig{Level: auditv1.LevelNone, OmitStages: p.omitStages, OmitManagedFields: p.omitManagedFields}
}

// unionStages returns the stages of both lists, each once, in order.
func unionStages(a, b []auditv1.Stage) []auditv1.Stage {
	var out []auditv1.Stage
	for _, list := range [][]auditv1.Stage{a, b} {
		for _, s := range list {
			if !containsStage(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

func containsStage(list []auditv1.Stage, s auditv1.Stage) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// decodeError names the line of the first rule that fails to decode on its
// own: JSON type errors carry a field name but no position.
func decodeError(doc *yaml.Node, err error) error {
	rules := nodeAt(doc, []string{"rules"})
	if rules != nil && rules.Kind == yaml.SequenceNode {
		for i, item := range rules.Content {
			raw, merr := yaml.Marshal(item)
			if merr != nil {
				continue
			}
			var r auditv1.PolicyRule
			if rerr := sigsyaml.Unmarshal(raw, &r); rerr != nil {
				return fmt.Errorf("line %d: rules[%d]: %w", item.Line, i, rerr)
			}
		}
	}
	return fmt.Errorf("decoding policy: %w", err)
}

// pathTokens splits a field path such as rules[3].resources[0].group into
// keys and indexes: rules, 3, resources, 0, group.
func pathTokens(path string) []string {
	path = strings.NewReplacer("[", ".", "]", "").Replace(path)
	return strings.Split(path, ".")
}

// lineOf returns the line of the deepest node along path that exists in
// the document (the whole document's first line for an empty path).
func lineOf(doc *yaml.Node, path []string) int {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, tok := range path {
		next := child(n, tok)
		if next == nil {
			break
		}
		n, line = next, next.Line
	}
	return line
}

// nodeAt returns the node at path, or nil.
func nodeAt(doc *yaml.Node, path []string) *yaml.Node {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, tok := range path {
		if n = child(n, tok); n == nil {
			return nil
		}
	}
	return n
}

// child returns a mapping's value for key tok, or a sequence's item at index
// tok, or nil.
func child(n *yaml.Node, tok string) *yaml.Node {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == tok {
				return n.Content[i+1]
			}
		}
	case yaml.SequenceNode:
		if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(n.Content) {
			return n.Content[i]
		}
	}
	return nil
}
