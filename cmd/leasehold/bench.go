package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/leasehold/leasehold/internal/agent"
	"github.com/leasehold/leasehold/internal/bench"
)

// benchFlags are the flags every bench mode shares.
type benchFlags struct {
	kubeconfig     string
	kubeContext    string
	namespace      string
	duration       time.Duration
	clients        int
	connections    int
	contentType    string
	client         string
	serverPID      int
	output         string
	requestTimeout time.Duration
	cpuProfile     string
	nodeTokens     string
}

func (f *benchFlags) register(cmd *cobra.Command) {
	f.registerCommon(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.namespace, "namespace", "bench", "namespace of the benchmark's leases (created if missing)")
	fl.IntVar(&f.clients, "clients", 64, "number of concurrent clients")
	fl.IntVar(&f.connections, "connections", 4, "number of HTTP connections (separate transports) the clients share")
	fl.StringVar(&f.contentType, "content-type", bench.ContentTypeProtobuf, "request and response encoding: json or protobuf")
	fl.StringVar(&f.client, "client", bench.ClientTyped, "how renewals are sent: typed (client-go's typed clientset, as kubelets do) or lean (hand-built requests over HTTP/2 only, with client-go's TLS settings and credentials: less load-generator CPU per renewal, so on a shared machine more of it is left to the server)")
	fl.DurationVar(&f.requestTimeout, "request-timeout", bench.DefaultRequestTimeout, "timeout of each request")
}

// registerCommon registers the flags of every mode, fleet included.
func (f *benchFlags) registerCommon(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "path to the kubeconfig of the server to load (default: $KUBECONFIG or ~/.kube/config)")
	fl.StringVar(&f.kubeContext, "context", "", "kubeconfig context to use (default: the current context)")
	fl.DurationVar(&f.duration, "duration", 30*time.Second, "length of the measured period, after setup")
	fl.IntVar(&f.serverPID, "server-pid", 0, "PID of a local server process whose CPU time and peak RSS to report")
	fl.StringVar(&f.output, "output", "text", "final result format: text or json")
	fl.StringVar(&f.cpuProfile, "cpu-profile", "", "write a pprof CPU profile of this load generator (not the server) to this file")
	fl.StringVar(&f.nodeTokens, "node-tokens", "", "run as real nodes: every lease's requests (and its Node's) are sent by the node it is named after, user system:node:NAME in group system:nodes, with that node's bearer token from this kube-format token file (token,user,uid,groups), to which missing tokens are added (random, file mode 0600); start the server with --token-auth-file on the same file. Leases are in "+corev1.NamespaceNodeLease+" unless --namespace is given; the kubeconfig's credentials serve only for the namespace and the lease list")
}

// profiled runs fn under the CPU profiler when --cpu-profile is set: the
// load generator shares the machine with the server in most measurements,
// so its own cost is part of reading any throughput figure.
func (f *benchFlags) profiled(fn func() error) error { return withCPUProfile(f.cpuProfile, fn) }

// restConfig checks the output format and loads the server's REST config.
func (f *benchFlags) restConfig() (*rest.Config, error) {
	if f.output != "text" && f.output != "json" {
		return nil, fmt.Errorf("--output %q: want text or json", f.output)
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	restCfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules,
		&clientcmd.ConfigOverrides{CurrentContext: f.kubeContext}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	return restCfg, nil
}

// config turns the shared flags into a bench.Config and a client set; the
// caller closes the clients. The run's leases are name(0) to name(count-1):
// with --node-tokens, the nodes that renew them.
func (f *benchFlags) config(cmd *cobra.Command, name func(int) string, count int) (bench.Config, *bench.Clients, error) {
	restCfg, err := f.restConfig()
	if err != nil {
		return bench.Config{}, nil, err
	}
	clients, err := f.newClients(cmd, restCfg, name, count)
	if err != nil {
		return bench.Config{}, nil, err
	}
	if f.nodeTokens != "" && !cmd.Flags().Changed("namespace") {
		f.namespace = corev1.NamespaceNodeLease
	}
	cfg := bench.Config{
		Namespace:      f.namespace,
		Duration:       f.duration,
		Clients:        f.clients,
		RequestTimeout: f.requestTimeout,
		ServerPID:      f.serverPID,
		Progress:       cmd.ErrOrStderr(),
		Logger:         slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)),
	}
	return cfg, clients, nil
}

// newClients builds the clients: node clients with --node-tokens (see
// tokens).
func (f *benchFlags) newClients(cmd *cobra.Command, restCfg *rest.Config, name func(int) string, count int) (*bench.Clients, error) {
	if f.nodeTokens == "" {
		return bench.NewClientsOfKind(restCfg, f.client, f.contentType, f.connections)
	}
	tokens, err := f.tokens(cmd, name, count)
	if err != nil {
		return nil, err
	}
	return bench.NewNodeClients(restCfg, f.client, f.contentType, f.connections, tokens)
}

// tokens makes sure the --node-tokens file has a token for each of the
// count nodes name names.
func (f *benchFlags) tokens(cmd *cobra.Command, name func(int) string, count int) (*bench.NodeTokens, error) {
	names := make([]string, count)
	for i := range names {
		names[i] = name(i)
	}
	tokens, err := bench.EnsureNodeTokens(f.nodeTokens, names)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "node tokens: %d nodes, %d new tokens written to %s\n", count, tokens.Added(), tokens.Path())
	return tokens, nil
}

// print writes the final result to standard output.
func (f *benchFlags) print(cmd *cobra.Command, res bench.Result) error {
	if f.output == "json" {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return fmt.Errorf("writing result: %w", err)
		}
		return nil
	}
	_, err := fmt.Fprintln(cmd.OutOrStdout(), res.String())
	return err
}

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load generator: lease renewals against any Kubernetes-compatible server",
		Long: `bench renews leases through client-go as kubelets do (an update of the cached
lease with its resourceVersion; on conflict a GET and a retry) and reports
throughput, latency percentiles, errors by kind and, with --server-pid, the
server's CPU time and peak RSS. A progress line goes to standard error every
second and the final result to standard output.

Unless GOGC is set, the Go garbage collector runs at GOGC=1600: the
generator's collector would otherwise take CPU from a server that shares
the machine, and its pauses would show in the latency it measures.

Renewing as real nodes: with --node-tokens FILE, lease N is renewed by
node N (in fleet mode, agent N sends all its requests as node N), user
system:node:N in group system:nodes, every request carrying N's own bearer
token from FILE, a kube-apiserver token file
(token,user,uid,"group1,group2") to which bench adds a random token for each
node that has none (mode 0600). Start the server with
--token-auth-file FILE: leasehold serve re-reads the file when bench adds
tokens, and bench waits until the server accepts them. The Node authorizer
and NodeRestriction then judge every renewal (and with rate
--register-nodes every Node registration) as they judge a kubelet's. The
leases go to kube-node-lease, the only namespace a node may write. Tokens
stand in for one client certificate per node, as in Kubernetes' own
integration tests, because a certificate is per connection and the
generator carries many nodes on each; so these connections present no
certificate (it would identify the caller before the token), and the
kubeconfig's credentials serve only to create the namespace and list its
leases. For example:

  install -m 600 /dev/null tokens.csv     # the server needs the file to exist
  leasehold serve --token-auth-file tokens.csv &
  leasehold bench rate --nodes 100000 --client lean --node-tokens tokens.csv`,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			applyGCDefaults(slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)), benchGCPercent)
		},
	}
	cmd.AddCommand(newBenchMaxCmd(), newBenchRateCmd(), newBenchFleetCmd(), newBenchEtcdCASCmd(), newBenchBaselineCmd())
	return cmd
}

func newBenchMaxCmd() *cobra.Command {
	var (
		flags  benchFlags
		leases int
	)
	cmd := &cobra.Command{
		Use:   "max",
		Short: "Renew leases back to back with a fixed number of clients: peak throughput",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return flags.profiled(func() error { return runBenchMax(cmd, &flags, leases) })
		},
	}
	flags.register(cmd)
	cmd.Flags().IntVar(&leases, "leases", 1000, "number of leases, partitioned among the clients")
	return cmd
}

func runBenchMax(cmd *cobra.Command, flags *benchFlags, leases int) error {
	cfg, clients, err := flags.config(cmd, bench.MaxLeaseName, leases)
	if err != nil {
		return err
	}
	defer clients.Close()
	cfg.Leases = leases
	res, err := bench.RunMax(cmd.Context(), cfg, clients.Factory())
	if err != nil {
		return err
	}
	return flags.print(cmd, res)
}

func newBenchRateCmd() *cobra.Command {
	var (
		flags         benchFlags
		nodes         int
		interval      time.Duration
		registerNodes bool
	)
	cmd := &cobra.Command{
		Use:   "rate",
		Short: "Simulate nodes each renewing its lease once per interval: latency at a fixed load",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return flags.profiled(func() error {
				cfg, clients, err := flags.config(cmd, bench.RateNodeName, nodes)
				if err != nil {
					return err
				}
				defer clients.Close()
				cfg.Nodes, cfg.Interval, cfg.RegisterNodes = nodes, interval, registerNodes
				if registerNodes && !cmd.Flags().Changed("namespace") {
					cfg.Namespace = corev1.NamespaceNodeLease
				}
				res, err := bench.RunRate(cmd.Context(), cfg, clients.Factory())
				if err != nil {
					return err
				}
				return flags.print(cmd, res)
			})
		},
	}
	flags.register(cmd)
	cmd.Flags().IntVar(&nodes, "nodes", 10000, "number of simulated nodes, one lease each")
	cmd.Flags().DurationVar(&interval, "interval", 10*time.Second, "how often each node renews")
	cmd.Flags().BoolVar(&registerNodes, "register-nodes", false, "register a Ready Node per simulated node (labelled "+bench.FleetLabel+"=true) that owns its lease, as a kubelet does, so the server carries real nodes; the leases go to "+corev1.NamespaceNodeLease+" unless --namespace is given")
	return cmd
}

// fleetRampPerNode is the default ramp: registering about a thousand nodes
// a second keeps the registration burst well below the steady renewal load
// of a fleet renewing every 10 s.
const fleetRampPerNode = time.Millisecond

// defaultFleetRamp is 1 ms per node but at least one renewal interval: the
// agents' renewals keep the phase their starts had (the 4% jitter spreads
// them only slowly), so starts bunched into less than an interval would
// measure bursts rather than a fleet's steady, even load.
func defaultFleetRamp(nodes int, leaseSeconds int32) time.Duration {
	renewEvery := agent.Config{LeaseDurationSeconds: leaseSeconds}.RenewInterval()
	return max(time.Duration(nodes)*fleetRampPerNode, renewEvery)
}

func newBenchFleetCmd() *cobra.Command {
	var (
		flags        benchFlags
		nodes        int
		connections  int
		leaseSeconds int32
		ramp         time.Duration
		statusEvery  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Run N real node agents in this process: a fleet heartbeating as kubelets do",
		Long: `fleet runs --nodes real node agents (the code of leasehold agent) in this
process, sharing --connections pairs of clientsets (protobuf, unthrottled).
Their starts are spread over --ramp; once every node has registered and
renewed its lease, the measured period begins: the latency and errors of
every lease renewal are recorded. Each agent also reads its Node every
--node-status-update-frequency, as a kubelet does, which is load on the server
but not measured. Nodes are named bench-fleet-NNNNNN and labelled
` + bench.FleetLabel + `=true; a later run adopts them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			restCfg, err := flags.restConfig()
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("ramp") {
				ramp = defaultFleetRamp(nodes, leaseSeconds)
			}
			cfg := bench.Config{
				Duration:                  flags.duration,
				Clients:                   connections,
				Nodes:                     nodes,
				LeaseDurationSeconds:      leaseSeconds,
				Ramp:                      ramp,
				NodeStatusUpdateFrequency: statusEvery,
				ServerPID:                 flags.serverPID,
				Progress:                  cmd.ErrOrStderr(),
				Logger:                    slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)),
			}
			if flags.nodeTokens != "" {
				if cfg.NodeTokens, err = flags.tokens(cmd, bench.FleetNodeName, nodes); err != nil {
					return err
				}
			}
			return flags.profiled(func() error {
				res, err := bench.RunFleet(cmd.Context(), cfg, restCfg)
				if err != nil {
					return err
				}
				return flags.print(cmd, res)
			})
		},
	}
	flags.registerCommon(cmd)
	fl := cmd.Flags()
	fl.IntVar(&nodes, "nodes", 1000, "number of node agents")
	fl.IntVar(&connections, "connections", 4, "number of client pairs (each its own registration and heartbeat connection) the agents share")
	fl.Int32Var(&leaseSeconds, "lease-duration-seconds", bench.DefaultLeaseDurationSeconds, "node lease duration; each node renews every quarter of it (keep the server's --node-monitor-grace-period, 50s by default, above it as Kubernetes does, or the server marks the nodes Unknown)")
	fl.DurationVar(&ramp, "ramp", 0, "spread the agents' starts over this long (default: 1ms per node, at least one renewal interval)")
	fl.DurationVar(&statusEvery, "node-status-update-frequency", 10*time.Second, "how often each agent reads its Node for a status report (the kubelet's default)")
	return cmd
}
