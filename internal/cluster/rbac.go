package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

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
	builder   *rbac.Builder
	built     chan struct{} // closed once a Policy was built from synced informers
	synced    []cache.InformerSynced
}

var _ rbac.Source = (*rbacSource)(nil)

func newRBACSource(inf rbacinformers.Interface, log *slog.Logger) (*rbacSource, error) {
	s := &rbacSource{informers: inf, log: log, builder: rbac.NewBuilder(), built: make(chan struct{})}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { s.builder.Changed() },
		UpdateFunc: func(any, any) { s.builder.Changed() },
		DeleteFunc: func(any) { s.builder.Changed() },
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
func (s *rbacSource) Policy() *rbac.Policy { return s.builder.Policy() }

// run rebuilds the Policy after changes until ctx ends. The informers must
// have been started.
func (s *rbacSource) run(ctx context.Context) {
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		return
	}
	var once sync.Once
	// Build at once from the synced stores; changes since are in them.
	s.builder.Changed()
	s.builder.Run(ctx, s.list, func() { once.Do(func() { close(s.built) }) })
}

// list reads the four kinds from the informers' stores.
func (s *rbacSource) list() (rbac.Objects, bool) {
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
		return rbac.Objects{}, false
	}
	return o, true
}
