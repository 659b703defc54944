// Package bench is the load generator behind `leasehold bench`: it drives any
// Kubernetes-compatible API server through client-go with lease renewals the
// way a kubelet does (an update of the cached lease carrying the
// resourceVersion of the last response; on 409 a GET and a retry) and reports
// throughput, latency percentiles, errors by kind and, given the server's PID,
// the server's CPU time and peak memory.
//
// Three workloads exist: max (C clients renewing their share of N leases as
// fast as the server answers), rate (N simulated nodes each renewing once per
// interval) and fleet (N real node agents from internal/agent in this
// process, registering Nodes and renewing their leases as kubelets do, every
// renewal observed through agent.Config.OnRenew). All implement Workload; Run
// drives any Workload through setup, a measured period with a progress line
// every second, and a final Result. A workload whose Setup starts work that
// outlives it (the fleet's agents) implements Closer, and Run closes it.
//
// Renewals go through leaseAPI, implemented by client-go's typed clientset
// (the default, as kubelets renew) and by the lean client (lean.go: requests
// built by hand with client-go's serializers, over an HTTP/2 transport with
// client-go's TLS settings and credentials, leantransport.go), which leaves
// more of a shared machine's CPU to the server; both report server errors as
// apierrors values, so conflicts and deletions are handled alike.
//
// Node clients (NewNodeClients, `--node-tokens`) renew every lease as the
// node it is named after: each request carries that node's bearer token from
// a kube-format token file (nodetokens.go), the lean client setting the
// header in place and the typed one through the request's context
// (nodeauth.go), over connections that present no client certificate; only
// the namespace and the lease list use the kubeconfig's own credentials.
//
// Invariants: each lease is owned by exactly one goroutine at a time, so its
// cached object never races; with node clients, every request about a lease
// or its Node carries that node's token and no other credential; latency is recorded only for successful
// operations and every failed one is counted under exactly one error kind;
// nothing here keeps global state, and every goroutine started by Run,
// the fleet's agents included, has stopped when Run returns.
package bench
