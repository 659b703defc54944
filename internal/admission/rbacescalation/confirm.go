package rbacescalation

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/component-helpers/auth/rbac/validation"

	"github.com/leasehold/leasehold/internal/request"
)

// confirmNoEscalation returns nil if u already holds every one of rules in
// namespace (cluster-wide only for ""), else Kubernetes' error listing the
// rules u lacks, one compact rule per line, sorted, followed by the
// errors met resolving u's own roles.
func (p *Plugin) confirmNoEscalation(u request.User, namespace string, rules []rbacv1.PolicyRule) error {
	if u.Name == "" {
		return errors.New("no user on context")
	}
	var resolutionErrors []error
	owned, err := p.resolver.RulesFor(u, namespace)
	if err != nil {
		// The rules found still count: RBAC only adds permissions.
		resolutionErrors = append(resolutionErrors, err)
	}
	covered, missing := validation.Covers(owned, rules)
	if covered {
		return nil
	}
	var lines []string
	for _, r := range compactRules(missing) {
		lines = append(lines, compactString(r))
	}
	slices.Sort(lines)
	lines = slices.Compact(lines)
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s", u.Name, u.Groups, strings.Join(lines, "\n"))
	if len(resolutionErrors) > 0 {
		msg += fmt.Sprintf("; resolution errors: %v", resolutionErrors)
	}
	return errors.New(msg)
}

// simpleResource is what compactRules merges verbs under: one group, one
// resource, at most one name.
type simpleResource struct {
	group, resource string
	hasName         bool
	name            string
}

// compactRules merges the rules that differ only in their verbs and have a
// single group and resource, at most one resource name and nothing else,
// as Kubernetes does for its message: Covers breaks the missing rules down
// to one verb each.
func compactRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, 0, len(rules))
	simple := map[simpleResource]*rbacv1.PolicyRule{}
	var order []simpleResource
	for _, r := range rules {
		key, ok := simpleKey(&r)
		if !ok {
			out = append(out, r)
			continue
		}
		if merged, seen := simple[key]; seen {
			merged.Verbs = append(merged.Verbs, r.Verbs...)
			continue
		}
		simple[key] = r.DeepCopy()
		order = append(order, key)
	}
	for _, key := range order {
		out = append(out, *simple[key])
	}
	return out
}

func simpleKey(r *rbacv1.PolicyRule) (simpleResource, bool) {
	if len(r.ResourceNames) > 1 || len(r.NonResourceURLs) > 0 || len(r.APIGroups) != 1 || len(r.Resources) != 1 {
		return simpleResource{}, false
	}
	only := &rbacv1.PolicyRule{APIGroups: r.APIGroups, Resources: r.Resources, Verbs: r.Verbs, ResourceNames: r.ResourceNames}
	if !reflect.DeepEqual(only, r) {
		return simpleResource{}, false
	}
	key := simpleResource{group: r.APIGroups[0], resource: r.Resources[0]}
	if len(r.ResourceNames) == 1 {
		key.hasName, key.name = true, r.ResourceNames[0]
	}
	return key, true
}

// compactString writes r as Kubernetes' escalation messages do:
// {APIGroups:["g"], Resources:["r"], NonResourceURLs:["/p"],
// ResourceNames:["n"], Verbs:["v"]}, leaving out empty lists.
func compactString(r rbacv1.PolicyRule) string {
	var parts []string
	for _, f := range []struct {
		name   string
		values []string
	}{
		{"APIGroups", r.APIGroups},
		{"Resources", r.Resources},
		{"NonResourceURLs", r.NonResourceURLs},
		{"ResourceNames", r.ResourceNames},
		{"Verbs", r.Verbs},
	} {
		if len(f.values) > 0 {
			parts = append(parts, fmt.Sprintf("%s:%q", f.name, f.values))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
