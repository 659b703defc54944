package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/leasehold/leasehold/internal/agent"
)

// leaseSlot is one lease and the last object the server returned for it.
// Exactly one goroutine works on a slot at a time (max mode partitions the
// slots; rate mode claims a slot with busy), so lease needs no lock.
type leaseSlot struct {
	name   string
	holder string
	// owners are the new lease's ownerReferences: its Node's, when the
	// run registers Nodes (Config.RegisterNodes).
	owners []metav1.OwnerReference
	// auth is what the lease's requests authenticate with: its node's
	// token with node clients (NewNodeClients), otherwise nil.
	auth authorization
	// lease is the server's object for the lease, decoded, or nil while
	// the Lease API keeps it parked: the bytes of the answer that brought
	// it (lean_parked.go).
	lease  *coordinationv1.Lease
	parked []byte
	busy   atomic.Bool // rate mode: a renewal of this slot is in flight
}

// ensureNamespace creates the namespace unless it exists.
func ensureNamespace(ctx context.Context, client kubernetes.Interface, name string, timeout time.Duration) error {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	_, err := client.CoreV1().Namespaces().Create(rctx, ns, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %q: %w", name, err)
	}
	return nil
}

// newLease is the object a slot starts with: held by its holder (and owned
// by its Node, if it has one), as a kubelet's lease is.
func newLease(namespace string, slot *leaseSlot, durationSeconds int32, now time.Time) *coordinationv1.Lease {
	t := metav1.NewMicroTime(now)
	holder := slot.holder
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: slot.name, Namespace: namespace, OwnerReferences: slot.owners},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       &holder,
			LeaseDurationSeconds: &durationSeconds,
			AcquireTime:          &t,
			RenewTime:            &t,
		},
	}
}

// listPageSize bounds each page of the LIST that finds existing leases.
const listPageSize = 1000

// ensureLeases makes every slot hold the server's current object for its
// lease: leases left by an earlier run are found with one paged LIST (a
// second run over 100,000 nodes should not cost 200,000 requests), the rest
// are created concurrently. With cfg.RegisterNodes each new lease's Node is
// registered (or found) just before the lease is created, as a kubelet does
// it, so that no Node waits for its first heartbeat while others register;
// an adopted lease keeps the owner it has.
func ensureLeases(ctx context.Context, cfg Config, clients []kubernetes.Interface, slots []*leaseSlot) error {
	if err := adoptExisting(ctx, cfg, adminOf(clients[0]), slots); err != nil {
		return err
	}
	return forEachSlot(ctx, clients, slots, func(ctx context.Context, client kubernetes.Interface, slot *leaseSlot) error {
		if slot.lease != nil {
			return nil
		}
		if cfg.RegisterNodes {
			if err := ensureNode(ctx, cfg, client, slot); err != nil {
				return err
			}
		}
		return ensureLease(ctx, cfg, client, slot)
	})
}

// forEachSlot calls fn for every slot, concurrently: worker w of clients
// takes slots w, w+len(clients), ...; the first error stops the rest.
func forEachSlot(ctx context.Context, clients []kubernetes.Interface, slots []*leaseSlot, fn func(context.Context, kubernetes.Interface, *leaseSlot) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for w, client := range clients {
		wg.Go(func() {
			for i := w; i < len(slots) && ctx.Err() == nil; i += len(clients) {
				if err := fn(ctx, client, slots[i]); err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// adoptExisting fills the slots whose lease already exists in the namespace.
func adoptExisting(ctx context.Context, cfg Config, client kubernetes.Interface, slots []*leaseSlot) error {
	byName := make(map[string]*leaseSlot, len(slots))
	for _, s := range slots {
		byName[s.name] = s
	}
	opts := metav1.ListOptions{Limit: listPageSize}
	for {
		rctx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
		page, err := client.CoordinationV1().Leases(cfg.Namespace).List(rctx, opts)
		cancel()
		if err != nil {
			return fmt.Errorf("listing existing leases in %q: %w", cfg.Namespace, err)
		}
		for i := range page.Items {
			if s, ok := byName[page.Items[i].Name]; ok {
				lease := page.Items[i]
				s.lease = &lease
			}
		}
		if page.Continue == "" {
			return nil
		}
		opts.Continue = page.Continue
	}
}

func ensureLease(ctx context.Context, cfg Config, client kubernetes.Interface, slot *leaseSlot) error {
	leases := client.CoordinationV1().Leases(cfg.Namespace)
	rctx, cancel := context.WithTimeout(withAuthorization(ctx, slot.auth), cfg.RequestTimeout)
	defer cancel()
	created, err := leases.Create(rctx, newLease(cfg.Namespace, slot, cfg.LeaseDurationSeconds, time.Now()), metav1.CreateOptions{})
	if err == nil {
		slot.lease = created
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating lease %s/%s: %w", cfg.Namespace, slot.name, err)
	}
	existing, err := leases.Get(rctx, slot.name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading existing lease %s/%s: %w", cfg.Namespace, slot.name, err)
	}
	slot.lease = existing
	return nil
}

// ensureNode registers the slot's Node as the agent does (a Ready status in
// the create), or finds it registered by an earlier run, and makes the Node
// the owner of the lease the slot will create. With a node's credentials
// the node registers itself, so its labels must be ones NodeRestriction
// lets a node set (FleetLabel and the kubelet's own are).
func ensureNode(ctx context.Context, cfg Config, client kubernetes.Interface, slot *leaseSlot) error {
	nodes := client.CoreV1().Nodes()
	rctx, cancel := context.WithTimeout(withAuthorization(ctx, slot.auth), cfg.RequestTimeout)
	defer cancel()
	node, err := nodes.Create(rctx, agent.InitialNode(benchAgentConfig(slot.name, "leasehold-bench-rate"), time.Now()), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		node, err = nodes.Get(rctx, slot.name, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("registering node %s: %w", slot.name, err)
	}
	slot.owners = []metav1.OwnerReference{agent.NodeOwnerReference(node)}
	return nil
}

// authorizeSlots gives every slot its node's credentials when the clients
// are node clients (NewNodeClients), whose leases must then be in
// kube-node-lease, the only namespace the Node authorizer lets a node write,
// and waits until the server accepts them. Other clients keep their own
// credentials.
func authorizeSlots(ctx context.Context, cfg Config, client kubernetes.Interface, slots []*leaseSlot) error {
	tokens := nodeTokensOf(client)
	if tokens == nil || len(slots) == 0 {
		return nil
	}
	if cfg.Namespace != corev1.NamespaceNodeLease {
		return fmt.Errorf("leases renewed as nodes must be in %q, not %q", corev1.NamespaceNodeLease, cfg.Namespace)
	}
	for _, s := range slots {
		auth, err := tokens.authorization(s.name)
		if err != nil {
			return err
		}
		s.auth = auth
	}
	probe, err := tokens.probeSlot(slots[len(slots)-1].name)
	if err != nil {
		return err
	}
	return awaitNodeToken(ctx, cfg, client, tokens, probe, nodeTokenWait)
}

// clientsFor asks the factory for every worker's clientset.
func clientsFor(factory ClientFactory, n int) ([]kubernetes.Interface, error) {
	if factory == nil {
		return nil, errors.New("no client factory")
	}
	clients := make([]kubernetes.Interface, n)
	for i := range clients {
		c, err := factory(i)
		if err != nil {
			return nil, fmt.Errorf("client for worker %d: %w", i, err)
		}
		clients[i] = c
	}
	return clients, nil
}
