// Package apiserveridentity publishes this server's identity lease and
// collects the identity leases of replicas that are gone, as kube-apiserver
// does with its post-start hooks start-kube-apiserver-identity-lease-controller
// and start-kube-apiserver-identity-lease-garbage-collector.
//
// Every replica owns the lease kube-system/apiserver-<hash>, where the hash
// is derived from its hostname (see LeaseName), so a restarted replica takes
// over its own object; its holderIdentity is "<lease name>_<uuid>" with a
// new uuid per process start. The lease lasts 3600 s and is renewed every
// 10 s through the shared lease controller algorithm (package
// leasecontroller). Counting the leases labelled
// apiserver.kubernetes.io/identity=kube-apiserver counts the live replicas.
//
// Invariants: the collector deletes a lease only if the copy it has just
// read from the server is expired (renewTime + leaseDurationSeconds before
// now, or either missing), and deletes that very version (resourceVersion
// precondition), so a lease renewed meanwhile is never deleted. Reads of the
// watch cache never modify its shared objects.
package apiserveridentity
