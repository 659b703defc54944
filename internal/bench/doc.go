// Package bench is the load generator behind `leasehold bench`: it drives any
// Kubernetes-compatible API server through client-go with lease renewals the
// way a kubelet does (an update of the cached lease carrying the
// resourceVersion of the last response; on 409 a GET and a retry) and reports
// throughput, latency percentiles, errors by kind and, given the server's PID,
// the server's CPU time and peak memory.
//
// Two workloads exist: max (C clients renewing their share of N leases as fast
// as the server answers) and rate (N simulated nodes each renewing once per
// interval). Both implement Workload; Run drives any Workload through setup,
// a measured period with a progress line every second, and a final Result, so
// further workloads (for example a fleet of real agents) plug in without
// touching the runner.
//
// Invariants: each lease is owned by exactly one goroutine at a time, so its
// cached object never races; latency is recorded only for successful
// operations and every failed one is counted under exactly one error kind;
// nothing here keeps global state, and every goroutine started by Run has
// stopped when Run returns.
package bench
