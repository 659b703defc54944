package rbac

import (
	"cmp"
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/leasehold/leasehold/internal/request"
)

// Source hands out the Policy that requests are judged against now.
type Source interface {
	Policy() *Policy
}

// Objects are the RBAC objects a Policy is built from.
type Objects struct {
	ClusterRoles        []*rbacv1.ClusterRole
	Roles               []*rbacv1.Role
	ClusterRoleBindings []*rbacv1.ClusterRoleBinding
	RoleBindings        []*rbacv1.RoleBinding
}

// Policy is an immutable snapshot of the roles and bindings, indexed for
// evaluation: every binding's role is resolved when the Policy is built, and
// bindings are found by the user and group names their subjects carry. A
// Policy is also a Source that always hands out itself (the in-memory
// source tests use). Build it with NewPolicy; never change the objects it
// holds.
type Policy struct {
	clusterRoles map[string]*rbacv1.ClusterRole
	roles        map[string]map[string]*rbacv1.Role // namespace → name
	cluster      bindingIndex
	namespaces   map[string]*bindingIndex

	clusterRoleBindings []*rbacv1.ClusterRoleBinding
	roleBindings        map[string][]*rbacv1.RoleBinding
}

// bindingIndex holds the bindings of one scope (all ClusterRoleBindings, or
// the RoleBindings of one namespace) in name order, and for each user name
// (service accounts as their user name) and group name the positions of the
// bindings that have such a subject, ascending.
type bindingIndex struct {
	entries []binding
	byUser  map[string][]int32
	byGroup map[string][]int32
}

// binding is one (Cluster)RoleBinding with its role resolved.
type binding struct {
	name      string
	namespace string // "" for a ClusterRoleBinding
	roleRef   rbacv1.RoleRef
	subjects  []rbacv1.Subject
	// found is false when the role does not exist (or roleRef's kind is
	// unknown): the binding grants nothing and evaluation reports why.
	found bool
	rules []rbacv1.PolicyRule
	// reasons[i] is the allow reason when subjects[i] is the one that
	// matched, made once here so that an allow allocates nothing.
	reasons []string
}

var empty = NewPolicy(Objects{})

// Policy implements Source.
func (p *Policy) Policy() *Policy { return p }

// NewPolicy indexes objs. Objects with the same name (and namespace) are
// not expected; the last one wins.
func NewPolicy(objs Objects) *Policy {
	p := &Policy{
		clusterRoles: make(map[string]*rbacv1.ClusterRole, len(objs.ClusterRoles)),
		roles:        map[string]map[string]*rbacv1.Role{},
		namespaces:   map[string]*bindingIndex{},
		roleBindings: map[string][]*rbacv1.RoleBinding{},
	}
	for _, r := range objs.ClusterRoles {
		p.clusterRoles[r.Name] = r
	}
	for _, r := range objs.Roles {
		byName := p.roles[r.Namespace]
		if byName == nil {
			byName = map[string]*rbacv1.Role{}
			p.roles[r.Namespace] = byName
		}
		byName[r.Name] = r
	}

	p.clusterRoleBindings = slices.Clone(objs.ClusterRoleBindings)
	slices.SortStableFunc(p.clusterRoleBindings, func(a, b *rbacv1.ClusterRoleBinding) int { return cmp.Compare(a.Name, b.Name) })
	for _, b := range p.clusterRoleBindings {
		p.cluster.add(p.newBinding(b.Name, "", b.RoleRef, b.Subjects))
	}

	for _, b := range objs.RoleBindings {
		p.roleBindings[b.Namespace] = append(p.roleBindings[b.Namespace], b)
	}
	for ns, list := range p.roleBindings {
		slices.SortStableFunc(list, func(a, b *rbacv1.RoleBinding) int { return cmp.Compare(a.Name, b.Name) })
		idx := &bindingIndex{}
		for _, b := range list {
			idx.add(p.newBinding(b.Name, ns, b.RoleRef, b.Subjects))
		}
		p.namespaces[ns] = idx
	}
	return p
}

// newBinding resolves the role a binding in namespace (""  for a
// ClusterRoleBinding) refers to, and describes each of its subjects.
func (p *Policy) newBinding(name, namespace string, ref rbacv1.RoleRef, subjects []rbacv1.Subject) binding {
	b := binding{name: name, namespace: namespace, roleRef: ref, subjects: subjects}
	switch ref.Kind {
	case "ClusterRole":
		if r, ok := p.clusterRoles[ref.Name]; ok {
			b.found, b.rules = true, r.Rules
		}
	case "Role":
		if r, ok := p.roles[namespace][ref.Name]; ok {
			b.found, b.rules = true, r.Rules
		}
	}
	b.reasons = make([]string, len(subjects))
	for i := range subjects {
		b.reasons[i] = "RBAC: allowed by " + b.describe(&subjects[i])
	}
	return b
}

// describe names the binding, its role and subject s as Kubernetes' RBAC
// reasons do: `ClusterRoleBinding "n" of ClusterRole "r" to User "u"`, or
// `RoleBinding "n/ns" of Role "r" to ServiceAccount "sa/ns"`.
func (b *binding) describe(s *rbacv1.Subject) string {
	if b.namespace == "" {
		return fmt.Sprintf("ClusterRoleBinding %q of %s %q to %s", b.name, b.roleRef.Kind, b.roleRef.Name, describeSubject(s, ""))
	}
	return fmt.Sprintf("RoleBinding %q of %s %q to %s", b.name+"/"+b.namespace, b.roleRef.Kind, b.roleRef.Name, describeSubject(s, b.namespace))
}

func describeSubject(s *rbacv1.Subject, bindingNamespace string) string {
	if s.Kind == rbacv1.ServiceAccountKind {
		ns := s.Namespace
		if ns == "" {
			ns = bindingNamespace
		}
		return fmt.Sprintf("%s %q", s.Kind, s.Name+"/"+ns)
	}
	return fmt.Sprintf("%s %q", s.Kind, s.Name)
}

// add appends b (bindings arrive in name order) and indexes its subjects.
func (x *bindingIndex) add(b binding) {
	if x.byUser == nil {
		x.byUser, x.byGroup = map[string][]int32{}, map[string][]int32{}
	}
	pos := int32(len(x.entries))
	x.entries = append(x.entries, b)
	for i := range b.subjects {
		s := &b.subjects[i]
		switch s.Kind {
		case rbacv1.UserKind:
			x.byUser[s.Name] = appendOnce(x.byUser[s.Name], pos)
		case rbacv1.GroupKind:
			x.byGroup[s.Name] = appendOnce(x.byGroup[s.Name], pos)
		case rbacv1.ServiceAccountKind:
			if u, ok := serviceAccountUser(s, b.namespace); ok {
				x.byUser[u] = appendOnce(x.byUser[u], pos)
			}
		}
	}
}

// appendOnce appends pos unless it is already last (a binding naming the
// same user twice).
func appendOnce(list []int32, pos int32) []int32 {
	if n := len(list); n > 0 && list[n-1] == pos {
		return list
	}
	return append(list, pos)
}

// serviceAccountUser is the user name of a ServiceAccount subject: its
// namespace defaults to the binding's, and without either it names no one.
func serviceAccountUser(s *rbacv1.Subject, bindingNamespace string) (string, bool) {
	ns := s.Namespace
	if ns == "" {
		ns = bindingNamespace
	}
	if ns == "" {
		return "", false
	}
	return request.ServiceAccountPrefix + ns + ":" + s.Name, true
}

// ClusterRoleBindings returns every ClusterRoleBinding, by name. The
// objects are shared: do not change them.
func (p *Policy) ClusterRoleBindings() []*rbacv1.ClusterRoleBinding { return p.clusterRoleBindings }

// RoleBindings returns the RoleBindings of namespace, by name.
func (p *Policy) RoleBindings(namespace string) []*rbacv1.RoleBinding {
	return p.roleBindings[namespace]
}

// ClusterRole returns the ClusterRole called name.
func (p *Policy) ClusterRole(name string) (*rbacv1.ClusterRole, bool) {
	r, ok := p.clusterRoles[name]
	return r, ok
}

// Role returns the Role namespace/name.
func (p *Policy) Role(namespace, name string) (*rbacv1.Role, bool) {
	r, ok := p.roles[namespace][name]
	return r, ok
}
