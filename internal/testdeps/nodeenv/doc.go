// Package nodeenv is the harness the node end-to-end suites share:
// internal/agent's tests, which run an agent in process against a server,
// and test/e2e's node scenarios, which run `leasehold agent` processes
// against `leasehold serve`. Both check an agent the same way through it: a
// checking client on the server under test, unique node names, and the
// waits for what an agent does there (its Node registered and Ready, its
// Lease owned by that Node and renewed on time, either gone), with the
// Node and Lease deleted when the test ends where the server is shared.
//
// Invariants: every wait is bounded and fails the test with what it last
// saw; every request has its own deadline; the checking client's
// connections, and their goroutines, are closed when the test ends.
package nodeenv
