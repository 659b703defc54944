// Package cluster is what `leasehold serve` needs to serve behind a real
// Kubernetes cluster, as the aggregated API server of coordination.k8s.io
// (kube-apiserver's APIService v1.coordination.k8s.io pointing at
// Leasehold): the cluster decides who a caller is, what they may do and which
// namespaces exist, and Leasehold keeps only the leases.
//
// Three parts, each built from the cluster's kubeconfigs
// (--authentication-kubeconfig, --authorization-kubeconfig):
//
//   - authentication (authenticate.go): requests kube-apiserver proxies carry
//     the caller in its front-proxy headers (X-Remote-User, X-Remote-Group,
//     X-Remote-Extra-*), trusted only over a client certificate signed by the
//     request-header CA with an allowed name; other callers present a
//     certificate of the cluster's client CA or a bearer token the cluster
//     reviews (TokenReview, answers cached 10 s). The CAs, header names and
//     allowed names are read from kube-system/extension-apiserver-authentication
//     and followed when it changes; flags override them.
//   - authorization (rbac.go, review.go): the cluster's RBAC objects are
//     watched and fed to Leasehold's own RBAC authorizer, so a renewal costs
//     no round trip; only what neither the Node authorizer nor RBAC allows is
//     asked of the cluster with a SubjectAccessReview (answers cached 10 s),
//     so that whatever else the cluster authorizes with (webhooks, ABAC) still
//     decides.
//   - namespaces (namespaces.go): NamespaceLifecycle admission reads the
//     cluster's namespaces from a watch, and reads live only on a miss.
//
// Invariants: nothing here writes to the cluster; every informer and
// controller started by Run stops when its context ends, and Run returns only
// after they have; no request is served before WaitSynced has returned, so
// an early request is never judged without the cluster's bindings.
package cluster
