package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/leasehold/leasehold/internal/leasecontroller"
)

// errStatusRetriesExceeded is the kubelet's final word after
// nodeStatusUpdateRetry failed tries.
var errStatusRetriesExceeded = errors.New("update node status exceeds retry count")

// nodeStatusUpdateRetry is the kubelet's bound on the tries of one node
// status update.
const nodeStatusUpdateRetry = 5

// statusController registers the Node and keeps its status current, the
// kubelet's syncNodeStatus. It is used by one goroutine only (run).
type statusController struct {
	client    kubernetes.Interface // registration
	heartbeat kubernetes.Interface // status reads and writes
	cfg       Config
	clock     clock.Clock
	log       *slog.Logger

	registered bool
	// lastReport is when status was last written; zero until the first write.
	lastReport time.Time
	// delay is the one-time spreading offset added to the report period
	// after a real change (see spreadDelay).
	delay time.Duration
}

func newStatusController(client, heartbeat kubernetes.Interface, cfg Config, clk clock.Clock, log *slog.Logger) *statusController {
	return &statusController{
		client:     client,
		heartbeat:  heartbeat,
		cfg:        cfg,
		clock:      clk,
		log:        log,
		registered: !cfg.RegisterNode,
	}
}

// run syncs node status every NodeStatusUpdateFrequency (jittered, sliding)
// until ctx ends.
func (s *statusController) run(ctx context.Context) {
	s.log.Info("Starting node status updates", "updateFrequency", s.cfg.NodeStatusUpdateFrequency, "reportFrequency", s.cfg.NodeStatusReportFrequency)
	leasecontroller.RunJittered(ctx, s.clock, s.cfg.NodeStatusUpdateFrequency, s.sync)
	s.log.Info("Stopped node status updates")
}

func (s *statusController) sync(ctx context.Context) {
	if !s.registered {
		if !s.register(ctx) {
			return
		}
		s.registered = true
	}
	err := s.update(ctx)
	if err == nil || ctx.Err() != nil {
		return
	}
	s.log.Error("Unable to update node status", "err", err)
}

// update tries up to nodeStatusUpdateRetry times. A Node that was deleted stays
// deleted: like the kubelet, the agent does not register again while it
// runs (an operator deleting a Node usually means it), but it keeps its
// heartbeats going so that a restart, or a Node re-created by hand, recovers.
func (s *statusController) update(ctx context.Context) error {
	var lastErr error
	for attempt := range nodeStatusUpdateRetry {
		lastErr = s.tryUpdate(ctx, attempt)
		if lastErr == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("update node status: %w", ctx.Err())
		}
		if attempt > 0 && s.cfg.OnRepeatedHeartbeatFailure != nil {
			s.cfg.OnRepeatedHeartbeatFailure()
		}
		s.log.Error("Error updating node status, will retry", "err", lastErr)
	}
	if apierrors.IsNotFound(lastErr) {
		s.log.Warn("Node not found on the API server: it was deleted; restart the agent to register it again")
	}
	return errStatusRetriesExceeded
}

// tryUpdate computes the status and PATCHes it if that is due. The first
// try reads with resourceVersion "0" (the server's cache is good enough and
// cheap); retries read the latest. A cached read may not have seen the Node
// registered a moment ago, so its NotFound is checked against the latest at
// once: the kubelet makes the same read on its next try, but logs the stale
// miss as a failed status update first.
func (s *statusController) tryUpdate(ctx context.Context, attempt int) error {
	opts := metav1.GetOptions{}
	if attempt == 0 {
		opts.ResourceVersion = "0"
	}
	nodes := s.heartbeat.CoreV1().Nodes()
	node, err := nodes.Get(ctx, s.cfg.NodeName, opts)
	if opts.ResourceVersion != "" && apierrors.IsNotFound(err) {
		node, err = nodes.Get(ctx, s.cfg.NodeName, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("error getting node %q: %w", s.cfg.NodeName, err)
	}
	now := s.clock.Now()
	wanted := node.DeepCopy()
	setNodeStatus(wanted, s.cfg, now)
	changed := nodeStatusChanged(&node.Status, &wanted.Status)
	if !shouldPatchStatus(changed, attempt, s.lastReport, now, s.cfg.NodeStatusReportFrequency, s.delay) {
		return nil
	}
	if _, err := patchNode(ctx, nodes, node, wanted, "status"); err != nil {
		return fmt.Errorf("error updating node %q status: %w", s.cfg.NodeName, err)
	}
	s.lastReport = now
	if changed {
		s.delay = spreadDelay(s.cfg.NodeStatusReportFrequency, rand.Float64())
		s.log.Info("Node status changed", "ready", readyStatus(wanted), "nextReportWithin", s.cfg.NodeStatusReportFrequency+s.delay)
	} else {
		s.delay = 0
		s.log.Debug("Reported node status")
	}
	return nil
}
