package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/leasehold/leasehold/internal/agent"
)

// agentFlags are the agent's command-line settings, named after the
// kubelet's flags where one exists.
type agentFlags struct {
	node            string
	kubeconfig      string
	leaseDuration   int32
	updateFrequency time.Duration
	reportFrequency time.Duration
	nodeLabels      map[string]string
	registerNode    bool
	apiQPS          float32
	apiBurst        int
	apiContentType  string
	verbosity       int
}

func newAgentCmd() *cobra.Command {
	f := agentFlags{}
	cmd := &cobra.Command{
		Use:   "agent --node NAME",
		Short: "Node heartbeat agent: registers a Node and renews its lease in kube-node-lease, like the kubelet",
		Long: `agent registers a Node and keeps it alive the way the kubelet does: it renews the
Lease kube-node-lease/NAME every quarter of --node-lease-duration-seconds, and posts
the Node's Ready condition when it changes or every --node-status-report-frequency.
It uses only client-go, so it works against leasehold serve or any Kubernetes API server.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Kubelet rule: an explicit update frequency without an explicit
			// report frequency means "report every update".
			if cmd.Flags().Changed("node-status-update-frequency") && !cmd.Flags().Changed("node-status-report-frequency") {
				f.reportFrequency = f.updateFrequency
			}
			return runAgent(cmd, f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.node, "node", "", "name of the Node, its Lease and the lease holder (kubelet --hostname-override); defaults to the host name")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file; defaults to $KUBECONFIG, then the in-cluster service account")
	fs.Int32Var(&f.leaseDuration, "node-lease-duration-seconds", agent.DefaultNodeLeaseDurationSeconds, "duration written into the node lease; it is renewed every quarter of it")
	fs.DurationVar(&f.updateFrequency, "node-status-update-frequency", agent.DefaultNodeStatusUpdateFrequency, "how often node status is computed")
	fs.DurationVar(&f.reportFrequency, "node-status-report-frequency", agent.DefaultNodeStatusReportFrequency, "how often node status is posted when nothing changed (equals --node-status-update-frequency if only that is set)")
	fs.StringToStringVar(&f.nodeLabels, "node-labels", nil, "labels added to the Node at registration, key=value,...")
	fs.BoolVar(&f.registerNode, "register-node", true, "create the Node; if false, only heartbeat a Node registered by someone else")
	fs.Float32Var(&f.apiQPS, "kube-api-qps", 50, "queries per second to the API server, for everything but heartbeats (which are never throttled)")
	fs.IntVar(&f.apiBurst, "kube-api-burst", 100, "burst of queries to the API server, for everything but heartbeats")
	fs.StringVar(&f.apiContentType, "kube-api-content-type", agent.ProtobufContentType, "content type of requests to the API server (application/vnd.kubernetes.protobuf or application/json)")
	fs.IntVarP(&f.verbosity, "v", "v", 0, "log verbosity: 0 info, 4 and above debug")
	return cmd
}

func runAgent(cmd *cobra.Command, f agentFlags) error {
	level := slog.LevelInfo
	if f.verbosity >= 4 {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))

	if f.node == "" {
		host, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("--node not set and host name unknown: %w", err)
		}
		f.node = host
	}
	version := agentVersion()
	cfg := agent.DefaultConfig(f.node)
	cfg.LeaseDurationSeconds = f.leaseDuration
	cfg.NodeStatusUpdateFrequency = f.updateFrequency
	cfg.NodeStatusReportFrequency = f.reportFrequency
	cfg.NodeLabels = f.nodeLabels
	cfg.RegisterNode = f.registerNode
	cfg.Version = "leasehold-" + version
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("agent flags: %w", err)
	}

	restConfig, source, err := loadRESTConfig(f.kubeconfig)
	if err != nil {
		return err
	}
	restConfig.QPS = f.apiQPS
	restConfig.Burst = f.apiBurst
	restConfig.UserAgent = fmt.Sprintf("leasehold-agent/%s (%s/%s)", version, runtime.GOOS, runtime.GOARCH)
	switch f.apiContentType {
	case agent.ProtobufContentType:
		agent.UseProtobuf(restConfig)
	case "application/json":
		restConfig.ContentType = f.apiContentType
	default:
		return fmt.Errorf("--kube-api-content-type %q: want %s or application/json", f.apiContentType, agent.ProtobufContentType)
	}
	clients, err := agent.NewClients(restConfig, cfg)
	if err != nil {
		return err
	}
	defer clients.Close()
	cfg.OnRepeatedHeartbeatFailure = clients.CloseHeartbeatConnections
	a, err := agent.New(clients.Client, clients.Heartbeat, cfg, clock.RealClock{}, log)
	if err != nil {
		return err
	}
	log.Info("Using API server", "host", restConfig.Host, "config", source)
	return a.Run(cmd.Context())
}

// loadRESTConfig finds the API server as the kubelet's users expect: the
// --kubeconfig file, else the files in $KUBECONFIG, else the in-cluster
// service account. It also says which one it used.
func loadRESTConfig(path string) (*rest.Config, string, error) {
	if path != "" {
		c, err := clientcmd.BuildConfigFromFlags("", path)
		if err != nil {
			return nil, "", fmt.Errorf("load --kubeconfig %s: %w", path, err)
		}
		return c, path, nil
	}
	if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		rules := &clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(env)}
		c, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return nil, "", fmt.Errorf("load $KUBECONFIG %s: %w", env, err)
		}
		return c, "$KUBECONFIG=" + env, nil
	}
	c, err := rest.InClusterConfig()
	if err != nil {
		return nil, "", fmt.Errorf("no --kubeconfig, no $KUBECONFIG, and not in a cluster: %w", err)
	}
	return c, "in-cluster", nil
}

// agentVersion is the module version the binary was built from, or
// v0.0.0-dev for a development build.
func agentVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "v0.0.0-dev"
}
