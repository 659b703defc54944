package timeline

import (
	"fmt"
	"strings"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// NodeLeaseNamespace holds each node's heartbeat Lease, named as the node.
const NodeLeaseNamespace = "kube-node-lease"

// Object names what a timeline is about.
type Object struct {
	Resource  string
	Namespace string
	Name      string
}

// ParseObject parses resource/name (cluster-scoped) or
// resource/namespace/name, as `leasehold audit` takes them.
func ParseObject(s string) (Object, error) {
	parts := strings.Split(s, "/")
	for _, p := range parts {
		if p == "" {
			return Object{}, fmt.Errorf("object %q: want resource/name or resource/namespace/name", s)
		}
	}
	switch len(parts) {
	case 2:
		return Object{Resource: parts[0], Name: parts[1]}, nil
	case 3:
		return Object{Resource: parts[0], Namespace: parts[1], Name: parts[2]}, nil
	}
	return Object{}, fmt.Errorf("object %q: want resource/name or resource/namespace/name", s)
}

func (o Object) String() string {
	if o.Namespace == "" {
		return o.Resource + "/" + o.Name
	}
	return o.Resource + "/" + o.Namespace + "/" + o.Name
}

// related returns o and the objects whose events belong in its timeline: a
// node's heartbeat lease, a heartbeat lease's node.
func (o Object) related() []Object {
	switch {
	case o.Resource == "nodes" && o.Namespace == "":
		return []Object{o, {Resource: "leases", Namespace: NodeLeaseNamespace, Name: o.Name}}
	case o.Resource == "leases" && o.Namespace == NodeLeaseNamespace:
		return []Object{{Resource: "nodes", Name: o.Name}, o}
	}
	return []Object{o}
}

// matches reports whether ref is o or one of its subresources.
func (o Object) matches(ref *auditv1.ObjectReference) bool {
	return ref != nil && ref.Resource == o.Resource && ref.Namespace == o.Namespace && ref.Name == o.Name
}
