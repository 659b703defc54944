package bench

import (
	"k8s.io/client-go/kubernetes"
)

// workerClientset is what Clients.Factory hands a worker: the typed
// clientset of its connection, and what the connection's kind adds to it.
type workerClientset struct {
	kubernetes.Interface
	// lean, for lean clients, renews leases over the same connection.
	lean *leanConn
	// admin and tokens are set for node clients (NewNodeClients): admin
	// carries the kubeconfig's credentials for what no node may do, and
	// tokens each node's.
	admin  kubernetes.Interface
	tokens *NodeTokens
}

// leaseAPI implements leaseAPIProvider.
func (w *workerClientset) leaseAPI(namespace string) leaseAPI {
	if w.lean != nil {
		return newLeanLeases(w.lean, namespace)
	}
	return typedLeases{w.CoordinationV1().Leases(namespace)}
}

// adminOf is the clientset for what only the kubeconfig's own credentials
// may do: client itself, unless it renews as nodes.
func adminOf(client kubernetes.Interface) kubernetes.Interface {
	if w, ok := client.(*workerClientset); ok && w.admin != nil {
		return w.admin
	}
	return client
}

// nodeTokensOf is the node tokens client renews with, or nil if it renews
// with its own credentials.
func nodeTokensOf(client kubernetes.Interface) *NodeTokens {
	if w, ok := client.(*workerClientset); ok {
		return w.tokens
	}
	return nil
}
