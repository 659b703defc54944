package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/labels"
	rbacinformers "k8s.io/client-go/informers/rbac/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/leasehold/leasehold/internal/authz/rbac"
)

// rbacSource keeps an rbac.Policy in step with the cluster's RBAC objects,
// read from informers: the cluster's ClusterRoles, ClusterRoleBindings,
// Roles and RoleBindings are what Leasehold's RBAC authorizer judges with,
// so a caller the cluster's RBAC allows is allowed here without a round
// trip. One builder makes a new Policy after each burst of changes;
// requests read the last one built, without locking.
type rbacSource struct {
	informers rbacinformers.Interface
	log       *slog.Logger
	current   atomic.Pointer[rbac.Policy]
	dirty     chan struct{} // a change awaits a rebuild (capacity 1)
	built     chan struct{} // closed once a Policy was built from synced informers
	synced    []cache.InformerSynced
}

var _ rbac.Source = (*rbacSource)(nil)

func newRBACSource(inf rbacinformers.Interface, log *slog.Logger) (*rbacSource, error) {
	s := &rbacSource{informers: inf, log: log, dirty: make(chan struct{}, 1), built: make(chan struct{})}
	s.current.Store(rbac.NewPolicy(rbac.Objects{}))
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.changed() },
		UpdateFunc: func(any, any) { s.changed() },
		DeleteFunc: func(any) { s.changed() },
	}
	for _, i := range []cache.SharedIndexInformer{
		inf.ClusterRoles().Informer(), inf.ClusterRoleBindings().Informer(),
		inf.Roles().Informer(), inf.RoleBindings().Informer(),
	} {
		if _, err := i.AddEventHandler(handler); err != nil {
			return nil, fmt.Errorf("watching the cluster's RBAC objects: %w", err)
		}
		s.synced = append(s.synced, i.HasSynced)
	}
	return s, nil
}

// Policy implements rbac.Source.
func (s *rbacSource) Policy() *rbac.Policy { return s.current.Load() }

func (s *rbacSource) changed() {
	select {
	case s.dirty <- struct{}{}:
	default: // a rebuild is already due; it will see this change too
	}
}

// run rebuilds the Policy after changes until ctx ends. The informers must
// have been started.
func (s *rbacSource) run(ctx context.Context) {
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		return
	}
	s.rebuild()
	close(s.built)
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.dirty:
			s.rebuild()
		}
	}
}

func (s *rbacSource) rebuild() {
	var o rbac.Objects
	everything := labels.Everything()
	var errs [4]error
	o.ClusterRoles, errs[0] = s.informers.ClusterRoles().Lister().List(everything)
	o.ClusterRoleBindings, errs[1] = s.informers.ClusterRoleBindings().Lister().List(everything)
	o.Roles, errs[2] = s.informers.Roles().Lister().List(everything)
	o.RoleBindings, errs[3] = s.informers.RoleBindings().Lister().List(everything)
	if err := errors.Join(errs[:]...); err != nil {
		// A lister over an informer's store does not fail; keep the last
		// policy rather than judge with a partial one.
		s.log.Error("listing the cluster's RBAC objects", "err", err)
		return
	}
	s.current.Store(rbac.NewPolicy(o))
}
