// Package kubecluster starts a real Kubernetes control plane on this
// machine for tests: Debian's etcd, kube-apiserver and (optionally)
// kube-controller-manager, the latter two built by testdeps.KubeBinaries
// from the release pinned in internal/testdeps/kubetools. Tests use it to
// drive Leasehold as the aggregated API server for coordination.k8s.io/v1
// behind kube-apiserver (RouteGroupVersion), and to compare with
// kube-apiserver's own etcd storage (RouteLocal).
//
// Invariants:
//   - Real processes only, each started by this package and stopped by its
//     pid (SIGTERM, then SIGKILL after a bounded grace) in t.Cleanup; never
//     by name. They also get SIGKILL from the kernel if the test binary dies
//     (Pdeathsig), so a timed-out test leaves nothing running.
//   - Everything lives in t.TempDir(): certificates, keys, kubeconfigs,
//     etcd's data and one log file per process (logs/*.log), whose tails
//     are printed when the test fails.
//   - Every listener is on 127.0.0.1 on a port found free; when another
//     process takes that port first, the process exits and the harness
//     starts it again on a new port (bounded attempts). kube-apiserver keeps
//     its port across RestartAPIServer.
//   - Identities are the ones a kubeadm cluster has: the cluster CA signs
//     kube-apiserver's serving certificate and every client certificate
//     (admin in system:masters, system:kube-controller-manager,
//     system:node:<n> in system:nodes); a separate front-proxy CA signs the
//     one certificate kube-apiserver presents to aggregated servers (CN
//     front-proxy-client, the only allowed request-header name); a third CA
//     signs aggregated servers' serving certificates (the caBundle).
//   - kube-apiserver runs with Node,RBAC authorization and NodeRestriction
//     admission, so node credentials are confined as on a real cluster, and
//     with --enable-aggregator-routing=false, so an APIService can point at
//     an ExternalName Service for localhost (see RouteGroupVersion).
//   - The harness never leaves the APIService v1.coordination.k8s.io with
//     the automanaged label while it points elsewhere, so a kube-apiserver
//     restart cannot silently route leases back to etcd.
//
// The flags that are not what one would guess:
//   - --endpoint-reconciler-type=none: with --advertise-address=127.0.0.1
//     the default reconciler would try to publish a loopback endpoint for
//     the kubernetes Service, which validation rejects, every 10 s.
//   - The binaries are stamped with their release by -ldflags (see
//     testdeps.KubeBinaries); unstamped they report v0.0.0-master. They are
//     built with the local Go toolchain, not the one Kubernetes releases
//     with, and /version shows gitCommit "$Format:%H$".
//
// etcd: Debian's etcd-server is etcd 3.4 (3.4.23 on the team's machines).
// kube-apiserver 1.33 runs on it, but logs that etcd does not support
// RequestWatchProgress, so its consistent reads from the watch cache fall
// back to reading etcd; a difference from production etcd 3.5+ clusters
// that latency measurements through this harness should keep in mind.
package kubecluster
