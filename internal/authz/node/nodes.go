package node

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/leasehold/leasehold/internal/authz"
	"github.com/leasehold/leasehold/internal/request"
)

// authorizeNode decides a node's request on Node objects. Writes to the
// Node itself are allowed here and confined to the node's own Node, and to
// what a kubelet may change, by NodeRestriction. Reads are allowed only of
// the node's own Node, compared by name rather than by lookup, so an agent
// can look for its Node before registering it.
func authorizeNode(nodeName string, a *request.Attributes) (authz.Decision, string, error) {
	switch a.Subresource {
	case "":
		switch a.Verb {
		case "create", "update", "patch":
			return authz.DecisionAllow, "", nil
		case "get", "list", "watch":
			switch name := requestedName(a); name {
			case nodeName:
				return authz.DecisionAllow, "", nil
			case "":
				return authz.DecisionNoOpinion, fmt.Sprintf("node '%s' cannot read all nodes, only its own Node object", nodeName), nil
			default:
				return authz.DecisionNoOpinion, fmt.Sprintf("node '%s' cannot read '%s', only its own Node object", nodeName, name), nil
			}
		}
	case "status":
		switch a.Verb {
		case "update", "patch":
			return authz.DecisionAllow, "", nil
		}
	}
	return authz.DecisionNoOpinion, "", nil
}

// requestedName is the one Node a request reads. A list or watch without a
// name in its path names one through the field selector metadata.name=<n>
// (or ==), possibly among other terms, as kube-apiserver's request info
// derives it; a selector naming no single valid object name names nothing.
func requestedName(a *request.Attributes) string {
	if a.Name != "" || a.FieldSelector == "" || (a.Verb != "list" && a.Verb != "watch") {
		return a.Name
	}
	sel, err := fields.ParseSelector(a.FieldSelector)
	if err != nil {
		return ""
	}
	name, ok := sel.RequiresExactMatch("metadata.name")
	if !ok || len(content.IsPathSegmentName(name)) != 0 {
		return ""
	}
	return name
}
