package node

import (
	"slices"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/leasehold/leasehold/internal/request"
)

// staticRule grants verbs on resources of one API group to every node.
type staticRule struct {
	group     string
	resources []string
	verbs     []string
}

// staticRules are the entries of Kubernetes' system:node rules
// (bootstrappolicy.NodeRules) that are not decided per node and that name a
// resource Leasehold can serve. No rule has a wildcard, a subresource or a
// resource name, so matching is plain membership.
var staticRules = [...]staticRule{
	{authenticationv1.GroupName, []string{"tokenreviews"}, []string{"create"}},
	{authorizationv1.GroupName, []string{"subjectaccessreviews", "localsubjectaccessreviews"}, []string{"create"}},
	{corev1.GroupName, []string{"events"}, []string{"create", "update", "patch"}},
}

// staticRulesAllow reports whether a static rule covers a resource request
// (without a subresource, which no static rule names).
func staticRulesAllow(a *request.Attributes) bool {
	if !a.ResourceRequest || a.Subresource != "" {
		return false
	}
	for i := range staticRules {
		r := &staticRules[i]
		if r.group == a.APIGroup && slices.Contains(r.resources, a.Resource) && slices.Contains(r.verbs, a.Verb) {
			return true
		}
	}
	return false
}
