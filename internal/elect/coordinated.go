package elect

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	coordinationv1beta1 "k8s.io/api/coordination/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/leasehold/leasehold/internal/registry/leasecandidate"
)

// Coordination makes the elector take part in coordinated leader election
// (KEP-4355): instead of competing for the Lease, it registers a
// LeaseCandidate (named after its identity, in the Lease's namespace) and
// leads when the server's election controller names it holder. The
// strategy is OldestEmulationVersion.
type Coordination struct {
	// BinaryVersion and EmulationVersion are semantic versions
	// (MAJOR.MINOR.PATCH), EmulationVersion <= BinaryVersion; the
	// candidate with the lowest emulation version wins.
	BinaryVersion, EmulationVersion string
}

// candidateSpec is the LeaseCandidate spec the elector registers.
func (c *Coordination) candidateSpec(leaseName string) coordinationv1beta1.LeaseCandidateSpec {
	return coordinationv1beta1.LeaseCandidateSpec{
		LeaseName:        leaseName,
		BinaryVersion:    c.BinaryVersion,
		EmulationVersion: c.EmulationVersion,
		Strategy:         coordinationv1.OldestEmulationVersion,
	}
}

// validate applies the server's LeaseCandidate validation, so that bad
// versions are a usage error at start and not a retry loop later.
func (c *Coordination) validate(leaseName string) error {
	spec := c.candidateSpec(leaseName)
	if errs := leasecandidate.ValidateSpec(&spec, field.NewPath("coordinated")); len(errs) > 0 {
		return fmt.Errorf("coordinated election: %w", errs.ToAggregate())
	}
	return nil
}

// withdrawTimeout bounds the deletion of the LeaseCandidate at exit.
const withdrawTimeout = 5 * time.Second

// candidacy is a running client-go LeaseCandidate controller that keeps
// this elector's LeaseCandidate renewed and answers the server's pings.
type candidacy struct {
	client          kubernetes.Interface
	namespace, name string
	log             *slog.Logger
	cancel          context.CancelFunc
	wg              sync.WaitGroup
	shutdown        func()
	once            sync.Once
}

// startCandidacy registers the candidate with client-go's NewCandidate and
// runs it until withdraw. ctx carries the logger client-go logs to.
func startCandidacy(ctx context.Context, c kubernetes.Interface, namespace, identity, leaseName string, co *Coordination, log *slog.Logger) (*candidacy, error) {
	spec := co.candidateSpec(leaseName)
	cand, waiter, err := leaderelection.NewCandidate(c, namespace, identity, leaseName, spec.BinaryVersion, spec.EmulationVersion, spec.Strategy)
	if err != nil {
		return nil, fmt.Errorf("set up lease candidate %s/%s: %w", namespace, identity, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	cy := &candidacy{client: c, namespace: namespace, name: identity, log: log, cancel: cancel, shutdown: func() {}}
	// NewCandidate starts informers it never waits for; their factory
	// does, on Shutdown.
	if f, ok := waiter.(interface{ Shutdown() }); ok {
		cy.shutdown = f.Shutdown
	}
	cy.wg.Go(func() { cand.Run(ctx) })
	log.Info("registered as lease candidate", "candidate", namespace+"/"+identity,
		"binaryVersion", spec.BinaryVersion, "emulationVersion", spec.EmulationVersion, "strategy", spec.Strategy)
	return cy, nil
}

// withdraw stops renewing the candidate and deletes it, so that the
// election controller stops considering this elector (a leftover candidate
// would be pinged, and waited for, until the garbage collector removes it
// 30 minutes later). It is idempotent and safe from any goroutine.
func (cy *candidacy) withdraw() {
	cy.once.Do(func() {
		cy.cancel()
		cy.wg.Wait()
		cy.shutdown()
		ctx, cancel := context.WithTimeout(context.Background(), withdrawTimeout)
		defer cancel()
		err := cy.client.CoordinationV1beta1().LeaseCandidates(cy.namespace).Delete(ctx, cy.name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			cy.log.Warn("could not delete the lease candidate; the server's garbage collector will", "candidate", cy.namespace+"/"+cy.name, "err", err)
			return
		}
		cy.log.Info("withdrew lease candidate", "candidate", cy.namespace+"/"+cy.name)
	})
}
