// Package audit writes Leasehold's audit trail in kube-apiserver's format:
// audit.k8s.io/v1 Events, chosen by an audit.k8s.io/v1 Policy, handed to a
// Sink (package logbackend writes them as JSON lines).
//
// The request pipeline (internal/apiserver) drives it with one Request per
// API request: Auditor.Begin once the caller is authenticated (or has
// failed to be), the Log* methods while the verb runs, and End (or Panic)
// when the response is done. Begin returns nil when the policy says None,
// and every Request method is a no-op on nil, so the pipeline calls them
// unconditionally and a request left out of the audit costs one policy
// evaluation.
//
// Invariants:
//   - The events match kube-apiserver's field for field (the upstream Go
//     types are used, k8s.io/apiserver/pkg/apis/audit/v1), including its
//     stage rules: RequestReceived when the request is admitted,
//     ResponseStarted only for long-running requests (watches) and failed
//     authentications, ResponseComplete at the end, Panic instead of it when
//     the handler panicked.
//   - Bodies are kept only at the levels that log them: request bodies at
//     Request and above, response bodies at RequestResponse, and only for
//     resource requests.
//   - An event handed to a Sink is never modified afterwards, so a sink may
//     keep it and encode it on another goroutine.
package audit
