// Package pki holds Leasehold's public-key infrastructure: the cluster CA,
// the API server's serving certificate, client certificates (the identity
// mechanism of docs/security.md: CN = user, O = groups) and the kubeconfig files that
// carry them.
//
// Invariants:
//   - Everything lives as PEM files in one data directory; private keys are
//     always written with mode 0600 (and key files found wider on start are
//     restricted to it) and every file is written atomically (temporary
//     file + fsync + rename), so a crash never leaves a torn file.
//   - The server only requests client certificates (TLS 1.2 or later);
//     internal/authn verifies them per request against ClientCAPool.
//   - The CA is generated once and then reused forever: clients that trust it
//     (kubeconfigs handed out earlier) must keep working across restarts.
//   - Derived material (serving certificate, admin kubeconfig) is reused only
//     while it is still signed by the current CA, valid for more than
//     [RenewBefore], and matches what was asked for; otherwise it is reissued.
//   - Keys are ECDSA P-256: small, fast to handshake and accepted by every
//     Kubernetes client.
package pki
