package node

import (
	"strings"

	"github.com/leasehold/leasehold/internal/request"
)

// Identity reports whether u is a node, and which. A node is a user named
// system:node:<name> who is also in the system:nodes group; either alone
// is not enough, so a user merely named like a node, or a member of the
// group with another name, is treated as anyone else. A node whose name
// after the prefix is empty is a node (isNode is true) that cannot be
// matched to any Node: callers refuse it.
//
// This is Kubernetes' default node identifier; the Node authorizer and
// NodeRestriction both use it, so they always agree on who is a node.
func Identity(u *request.User) (name string, isNode bool) {
	name, ok := strings.CutPrefix(u.Name, request.NodeUserPrefix)
	if !ok || !u.InGroup(request.NodesGroup) {
		return "", false
	}
	return name, true
}
