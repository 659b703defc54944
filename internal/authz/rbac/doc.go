// Package rbac is the RBAC authorizer (--authorization-mode=RBAC): it allows
// a request when a rule of a role bound to the caller matches it, as
// kube-apiserver's plugin/pkg/auth/authorizer/rbac does, and it lists the
// rules a caller holds (SelfSubjectRulesReview, the escalation check).
//
// Invariants:
//   - RBAC only allows: it never denies. A request no rule matches gets
//     NoOpinion, with reason "" or "RBAC: " and the errors met resolving
//     roles (a binding to a missing role).
//   - Evaluation walks ClusterRoleBindings, then the RoleBindings of the
//     request's namespace, and stops at the first rule that allows; the
//     reason names that binding, its role and the subject that matched.
//   - One request is judged against one Policy: an immutable snapshot of the
//     roles and bindings in which every binding's role is already resolved
//     and every binding is indexed by the users and groups it names, so the
//     allow path reads only the bindings that name the caller and allocates
//     nothing. A Source hands out the current Policy; CacheSource keeps it
//     in step with the server's watch cache.
package rbac
