package bench

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/leasehold/leasehold/internal/agent"
)

// FleetLabel marks the Nodes bench registers (a fleet, or rate mode with
// Config.RegisterNodes), so they can be told apart from real ones (and
// listed or deleted together).
const FleetLabel = "leasehold.io/bench-fleet"

// benchAgentConfig is the agent configuration of a node bench registers:
// labelled with FleetLabel, and reporting version as its kubelet version.
func benchAgentConfig(nodeName, version string) agent.Config {
	c := agent.DefaultConfig(nodeName)
	c.NodeLabels = map[string]string{FleetLabel: "true"}
	c.Version = version
	return c
}

// FleetNodeName is the name of fleet node i: the same across runs, so a
// second run adopts the Nodes and Leases of the first as restarted kubelets
// would.
func FleetNodeName(i int) string { return fmt.Sprintf("bench-fleet-%06d", i) }

// FleetWorkload runs cfg.Nodes real node agents (internal/agent, the code
// behind `leasehold agent`) in this process. They share cfg.Clients pairs of
// clientsets (protobuf, unthrottled: one client-side rate limiter shared by
// thousands of nodes would measure the limiter, and the ramp paces
// registration instead) and report every lease renewal through
// agent.Config.OnRenew.
//
// The agents start during Setup, spread over cfg.Ramp, and Setup returns
// once every node has renewed its lease at least once; Run records the
// steady state; Close (called by Run, see Closer) stops the agents. Each node
// also reads its Node every cfg.NodeStatusUpdateFrequency and patches its
// status when the kubelet would, so the server sees a kubelet's whole
// heartbeat load, not only the leases; only lease renewals are measured.
type FleetWorkload struct {
	cfg  Config
	base *rest.Config
	logs *logTally

	nodes   []fleetNode
	clients []agent.Clients
	agents  []*agent.Agent
	// auths are the nodes' credentials with Config.NodeTokens, else nil.
	auths []authorization
	// rec receives the observations: a setup recorder while the fleet
	// ramps up, the run's recorder during the measured period, then nil.
	rec      atomic.Pointer[Recorder]
	started  atomic.Int64 // agents whose Run has been started
	renewing atomic.Int64 // nodes with at least one successful renewal
	// runLog is what the agents logged during the measured period.
	runLog map[string]uint64

	cancel    context.CancelFunc
	wg        sync.WaitGroup // the ramp and every agent's Run
	closeOnce sync.Once
}

// fleetNode is what the fleet tracks per node.
type fleetNode struct {
	renewals atomic.Uint64
}

// NewFleetWorkload checks cfg for the fleet workload; base (not modified)
// says how to reach the server and must not set Dial.
func NewFleetWorkload(cfg Config, base *rest.Config) (*FleetWorkload, error) {
	if cfg.Namespace == "" {
		cfg.Namespace = corev1.NamespaceNodeLease
	}
	if cfg.NodeStatusUpdateFrequency == 0 {
		cfg.NodeStatusUpdateFrequency = agent.DefaultNodeStatusUpdateFrequency
	}
	cfg = cfg.withDefaults()
	if err := cfg.validateCommon(); err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	switch {
	case cfg.Nodes <= 0:
		return nil, fmt.Errorf("invalid configuration: fleet mode needs nodes, got %d", cfg.Nodes)
	case cfg.Ramp < 0:
		return nil, fmt.Errorf("invalid configuration: ramp must not be negative, got %v", cfg.Ramp)
	case base == nil:
		return nil, fmt.Errorf("invalid configuration: no REST config")
	}
	w := &FleetWorkload{cfg: cfg, base: base, logs: newLogTally(cfg.Logger.Handler())}
	if err := w.agentConfig(0, nil).Validate(); err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	return w, nil
}

// agentConfig is node i's agent configuration.
func (w *FleetWorkload) agentConfig(i int, onRenew func(time.Duration, error)) agent.Config {
	c := benchAgentConfig(FleetNodeName(i), "leasehold-bench-fleet")
	c.LeaseDurationSeconds = w.cfg.LeaseDurationSeconds
	c.NodeStatusUpdateFrequency = w.cfg.NodeStatusUpdateFrequency
	c.OnRenew = onRenew
	// OnRepeatedHeartbeatFailure stays unset: it would close a heartbeat
	// connection that thousands of other nodes share, turning one node's
	// slow requests into everyone's errors.
	return c
}

// Name implements Workload.
func (w *FleetWorkload) Name() string {
	c := w.agentConfig(0, nil)
	return fmt.Sprintf("fleet: %d agents, lease %ds renewed every %v (%.0f/s), status every %v, %d connections, ramp %v",
		w.cfg.Nodes, c.LeaseDurationSeconds, c.RenewInterval(), float64(w.cfg.Nodes)/c.RenewInterval().Seconds(),
		c.NodeStatusUpdateFrequency, w.cfg.Clients, w.cfg.Ramp)
}

// Setup implements Workload: it starts the agents over cfg.Ramp and returns
// once every node has renewed its lease (registration, lease creation and a
// first renewal done), or fails if that takes far longer than it should.
func (w *FleetWorkload) Setup(ctx context.Context) error {
	if w.cancel != nil {
		return fmt.Errorf("fleet set up twice")
	}
	rc := rest.CopyConfig(w.base)
	if w.cfg.NodeTokens != nil {
		// A client certificate would identify the caller before the token.
		rc = rest.AnonymousClientConfig(w.base)
		rc.WrapTransport = withNodeAuthorization
		var err error
		if w.auths, err = w.nodeAuthorizations(); err != nil {
			return err
		}
	}
	agent.UseProtobuf(rc)
	rc.QPS, rc.Burst, rc.RateLimiter = -1, 0, nil
	rc.UserAgent = "leasehold-bench-fleet"
	for i := range w.cfg.Clients {
		c, err := agent.NewClients(rc, w.agentConfig(0, nil))
		if err != nil {
			return fmt.Errorf("fleet clients %d: %w", i, err)
		}
		w.clients = append(w.clients, c)
	}

	setupRec := NewRecorder()
	w.rec.Store(setupRec)
	log := slog.New(w.logs)
	w.nodes = make([]fleetNode, w.cfg.Nodes)
	w.agents = make([]*agent.Agent, w.cfg.Nodes)
	for i := range w.agents {
		c := w.clients[i%len(w.clients)]
		a, err := agent.New(c.Client, c.Heartbeat, w.agentConfig(i, w.observer(&w.nodes[i])), clock.RealClock{}, log)
		if err != nil {
			return fmt.Errorf("fleet agent %d: %w", i, err)
		}
		w.agents[i] = a
	}

	if w.auths != nil {
		probe, err := w.cfg.NodeTokens.probeSlot(FleetNodeName(len(w.auths) - 1))
		if err != nil {
			return err
		}
		if err := awaitNodeToken(ctx, w.cfg, w.clients[0].Client, w.cfg.NodeTokens, probe, nodeTokenWait); err != nil {
			return err
		}
	}
	agentCtx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	w.wg.Go(func() { w.ramp(agentCtx) })
	return w.awaitRenewing(ctx, setupRec)
}

// nodeAuthorizations are the nodes' credentials from Config.NodeTokens.
func (w *FleetWorkload) nodeAuthorizations() ([]authorization, error) {
	auths := make([]authorization, w.cfg.Nodes)
	for i := range auths {
		var err error
		if auths[i], err = w.cfg.NodeTokens.authorization(FleetNodeName(i)); err != nil {
			return nil, err
		}
	}
	return auths, nil
}

// agentContext is the context agent i runs in: with its node's credentials
// when the fleet runs as nodes.
func (w *FleetWorkload) agentContext(ctx context.Context, i int) context.Context {
	if w.auths == nil {
		return ctx
	}
	return withAuthorization(ctx, w.auths[i])
}

// observer is node n's OnRenew hook.
func (w *FleetWorkload) observer(n *fleetNode) func(time.Duration, error) {
	return func(d time.Duration, err error) {
		rec := w.rec.Load()
		if err != nil {
			if rec != nil {
				if kind := ErrorKind(err); rec.Failure(kind) {
					w.cfg.Logger.Warn("first renewal failure of its kind", "kind", kind, "err", err)
				}
			}
			return
		}
		if n.renewals.Add(1) == 1 {
			w.renewing.Add(1)
		}
		if rec != nil {
			rec.Success(d)
		}
	}
}

// ramp starts agent i at i*Ramp/Nodes after the first, until ctx ends.
func (w *FleetWorkload) ramp(ctx context.Context) {
	start := time.Now()
	n := int64(len(w.agents))
	for i, a := range w.agents {
		due := start.Add(time.Duration(int64(i) * int64(w.cfg.Ramp) / n))
		if wait := time.Until(due); wait > dispatchSlack {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		w.wg.Go(func() {
			// Every request an agent makes derives its context from Run's,
			// so all of them carry the node's token.
			if err := a.Run(w.agentContext(ctx, i)); err != nil {
				w.cfg.Logger.Error("fleet agent", "node", FleetNodeName(i), "err", err)
			}
		})
		w.started.Add(1)
	}
}

// awaitRenewing waits, with a progress line each interval, until every node
// has renewed once.
func (w *FleetWorkload) awaitRenewing(ctx context.Context, setupRec *Recorder) error {
	c := w.agentConfig(0, nil)
	// Registration and the lease's creation take a renewal interval or two
	// after an agent starts, the first renewal one more; the margin covers
	// a slow, loaded server.
	limit := w.cfg.Ramp + 4*c.RenewInterval() + c.HeartbeatTimeout() + time.Minute
	start := time.Now()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	ticker := time.NewTicker(w.cfg.ProgressInterval)
	defer ticker.Stop()
	check := time.NewTicker(20 * time.Millisecond)
	defer check.Stop()
	var errs uint64
	for w.renewing.Load() < int64(w.cfg.Nodes) {
		select {
		case <-check.C:
		case <-ticker.C:
			errs += setupRec.Flush().Errors
			fmt.Fprintf(w.cfg.Progress, "%6.1fs  setup: %d/%d agents started, %d renewing, errors %d\n",
				time.Since(start).Seconds(), w.started.Load(), w.cfg.Nodes, w.renewing.Load(), errs)
		case <-deadline.C:
			return fmt.Errorf("after %v only %d of %d nodes have renewed their lease (%d agents started); renewal errors %v; agent log %v",
				limit, w.renewing.Load(), w.cfg.Nodes, w.started.Load(), setupRec.Totals().Errors, w.logs.snapshot())
		case <-ctx.Done():
			return fmt.Errorf("fleet setup: %w", ctx.Err())
		}
	}
	tot := setupRec.Totals()
	fmt.Fprintf(w.cfg.Progress, "%6.1fs  setup: all %d nodes registered and renewing; setup renewals %d, renewal errors %v\n",
		time.Since(start).Seconds(), w.cfg.Nodes, tot.Latency.Count(), tot.Errors)
	// The lease controller racing registration ("Failed to get node ...
	// owner ref") is expected here, as on a kubelet's first seconds.
	w.printLog("during setup", w.logs.snapshot())
	return nil
}

// printLog writes agent log counts to the progress output.
func (w *FleetWorkload) printLog(when string, counts map[string]uint64) {
	for _, msg := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(w.cfg.Progress, "agent log %s: %d x %s\n", when, counts[msg], msg)
	}
}

// Run implements Workload: the agents are already running; Run points
// their observations at rec until stop, then checks that every node
// renewed during the period if it was long enough for that to be certain.
// Nodes that did not are counted as errors of kind KindNodeWithoutRenewal.
func (w *FleetWorkload) Run(ctx context.Context, stop <-chan struct{}, rec *Recorder) error {
	if w.cancel == nil {
		return fmt.Errorf("fleet workload run before its setup")
	}
	before := make([]uint64, len(w.nodes))
	for i := range w.nodes {
		before[i] = w.nodes[i].renewals.Load()
	}
	start := time.Now()
	cpuStart, cpuErr := ProcCPUTime(os.Getpid())
	logStart := w.logs.snapshot()
	w.rec.Store(rec)
	select {
	case <-stop:
	case <-ctx.Done():
	}
	w.rec.Store(nil)
	elapsed := time.Since(start)
	w.runLog = subtractCounts(w.logs.snapshot(), logStart)
	w.printLog("during the measured period", w.runLog)
	if cpuEnd, err := ProcCPUTime(os.Getpid()); err == nil && cpuErr == nil && elapsed > 0 {
		used := cpuEnd - cpuStart
		fmt.Fprintf(w.cfg.Progress, "fleet process (load generator) CPU: %.1fs over %.1fs, %.2f cores\n",
			used.Seconds(), elapsed.Seconds(), used.Seconds()/elapsed.Seconds())
	}
	c := w.agentConfig(0, nil)
	// A healthy node renews every RenewInterval (+4% jitter) after its
	// previous renewal returned, a request lasting at most HeartbeatTimeout.
	if certain := 2*c.RenewInterval() + c.HeartbeatTimeout(); elapsed >= certain {
		for i := range w.nodes {
			if w.nodes[i].renewals.Load() == before[i] && rec.Failure(KindNodeWithoutRenewal) {
				w.cfg.Logger.Warn("node did not renew its lease during the measured period", "node", FleetNodeName(i))
			}
		}
	}
	return nil
}

// KindNodeWithoutRenewal counts fleet nodes that did not renew their lease
// once during a measured period long enough that every healthy node must.
const KindNodeWithoutRenewal = "node-without-renewal"

// Close implements Closer: it stops every agent and closes the clients'
// connections.
func (w *FleetWorkload) Close() {
	w.closeOnce.Do(func() {
		if w.cancel != nil {
			w.cancel()
		}
		w.wg.Wait()
		for _, c := range w.clients {
			c.Close()
		}
	})
}

// subtractCounts returns the counts in now that were not yet in before.
func subtractCounts(now, before map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for k, n := range now {
		if d := n - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// Renewals returns how many successful renewals each node has made so far,
// setup included; node i is FleetNodeName(i).
func (w *FleetWorkload) Renewals() []uint64 {
	out := make([]uint64, len(w.nodes))
	for i := range w.nodes {
		out[i] = w.nodes[i].renewals.Load()
	}
	return out
}

// AgentLog returns how many records the agents logged at warning level or
// above during the measured period, keyed by level and message. Renewal
// failures show up there too, besides the result's errors; node status
// failures only there.
func (w *FleetWorkload) AgentLog() map[string]uint64 { return maps.Clone(w.runLog) }

// RunFleet runs the fleet workload for cfg against the server base reaches.
func RunFleet(ctx context.Context, cfg Config, base *rest.Config) (Result, error) {
	w, err := NewFleetWorkload(cfg, base)
	if err != nil {
		return Result{}, err
	}
	return Run(ctx, w.cfg, w)
}
