// Package bootstrappolicy is the RBAC policy a Leasehold server creates and
// reconciles at start (package controller/rbacbootstrap): kube-apiserver's
// bootstrap roles and bindings, as data, restricted to the resources
// Leasehold serves, plus one role per built-in controller.
//
// Every object carries the label kubernetes.io/bootstrapping=rbac-defaults
// and the annotation rbac.authorization.kubernetes.io/autoupdate=true, as
// upstream's; an administrator who sets autoupdate to "false" keeps the
// object as it is. Rules are sorted within each rule (verbs, groups,
// resources, names, URLs) as upstream's golden files
// (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata) show them.
//
// Deviations from upstream, on purpose:
//   - Rules on resources Leasehold does not serve (secrets, configmaps,
//     services, PVs, CSRs, storage, apps, batch, ...) are left out, and so
//     are roles that only concern them (system:node-proxier,
//     system:kube-dns, system:volume-scheduler, the certificate approvers,
//     ...). The leader-locking Roles drop their ConfigMap rules.
//   - system:aggregate-to-view also reads leases and leasecandidates, and
//     system:aggregate-to-edit also writes leasecandidates (upstream's edit
//     writes leases only): on a Lease server, "view" that cannot see leases
//     would grant nothing useful.
//   - Controllers that upstream runs inside kube-apiserver as the server
//     itself (identity leases, lease candidate GC, coordinated leader
//     election across namespaces) and event expiry (etcd TTLs upstream)
//     get roles of their own, holding exactly the verbs they use through
//     the API; their reads go through the in-process watch cache.
//
// Invariants: every function returns fresh objects (callers may modify
// them); every role a binding refers to is part of the policy.
package bootstrappolicy
