package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/leasehold/leasehold/internal/elect"
)

// electOptions are the flags of `leasehold elect`.
type electOptions struct {
	lease         string
	identity      string
	kubeconfig    string
	leaseDuration time.Duration
	renewDeadline time.Duration
	retryPeriod   time.Duration
	gracePeriod   time.Duration
	healthzPort   int
	coordinated   bool
	binaryVersion string
	emulationVer  string
}

// newElectCmd is `leasehold elect`: run a command only while holding a
// Lease. Its exit codes (elect.ExitCodesHelp) are: 0 when the command
// exited with 0 or elect was stopped by SIGTERM/SIGINT; the command's own
// code when it exits by itself; 64 usage or configuration error; 69 API
// server unreachable at start; 75 leadership lost; 78 kubeconfig or
// credentials rejected; 126/127 the command could not be executed / found.
func newElectCmd() *cobra.Command {
	o := electOptions{
		leaseDuration: elect.DefaultLeaseDuration,
		renewDeadline: elect.DefaultRenewDeadline,
		retryPeriod:   elect.DefaultRetryPeriod,
		gracePeriod:   elect.DefaultGracePeriod,
	}
	cmd := &cobra.Command{
		Use:   "elect --lease NAMESPACE/NAME [flags] -- COMMAND [ARGS...]",
		Short: "Run a command only while holding a Lease (leader election)",
		Long: `Campaign for a coordination.k8s.io/v1 Lease with client-go leader election and
run COMMAND only while leading. When leadership is lost the command gets SIGTERM,
then SIGKILL after --grace-period. On SIGTERM/SIGINT elect stops the command,
releases the lease and exits. When the command exits by itself elect releases the
lease and exits with the command's code. Waiting candidates watch the lease
(they need list and watch on it) and take a released lease at once; a lease
that was not released is taken over only after --lease-duration.

The command runs in its own process group with stdout and stderr passed through
and this environment:
  LEASEHOLD_IDENTITY       this elector's holder identity
  LEASEHOLD_LEASE          NAMESPACE/NAME of the lease
  LEASEHOLD_FENCING_TOKEN  the lease's leaseTransitions at acquisition: strictly
                           greater than any earlier leader's token for this lease

With --coordinated, elect joins coordinated leader election (KEP-4355): it
registers a coordination.k8s.io/v1beta1 LeaseCandidate named after its identity
in the lease's namespace and never takes the lease itself; the server's election
controller names the holder (strategy OldestEmulationVersion: the lowest
--emulation-version, then the lowest --binary-version, then the oldest candidate
wins). When the controller asks the holder to hand over (spec.preferredHolder),
elect stops the command, withdraws its candidate, releases the lease and exits
with 75.

The kubeconfig is --kubeconfig, else $KUBECONFIG, else the in-cluster config.

` + elect.ExitCodesHelp,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); dash > 0 {
				return usageError(fmt.Errorf("unexpected arguments before --: %q", args[:dash]))
			}
			return o.run(cmd, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.lease, "lease", "", "the Lease to hold, as NAMESPACE/NAME (required)")
	f.StringVar(&o.identity, "identity", "", "holder identity (default <hostname>_<uuid>)")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "path to a kubeconfig (default $KUBECONFIG, else in-cluster)")
	f.DurationVar(&o.leaseDuration, "lease-duration", o.leaseDuration, "how long candidates wait after the last observed renewal before taking over")
	f.DurationVar(&o.renewDeadline, "renew-deadline", o.renewDeadline, "how long the leader retries renewing before giving up leadership")
	f.DurationVar(&o.retryPeriod, "retry-period", o.retryPeriod, "interval between acquire and renew attempts")
	f.DurationVar(&o.gracePeriod, "grace-period", o.gracePeriod, "time between SIGTERM and SIGKILL when stopping the command")
	f.IntVar(&o.healthzPort, "healthz-port", 0, "serve /healthz and /readyz on 127.0.0.1:PORT (0 disables)")
	f.BoolVar(&o.coordinated, "coordinated", false, "take part in coordinated leader election as a LeaseCandidate (needs --binary-version)")
	f.StringVar(&o.binaryVersion, "binary-version", "", "with --coordinated: this candidate's binary version, MAJOR.MINOR.PATCH")
	f.StringVar(&o.emulationVer, "emulation-version", "", "with --coordinated: the version it emulates, <= --binary-version (default --binary-version)")
	return cmd
}

func usageError(err error) error { return &exitError{code: elect.ExitUsage, err: err} }

// run builds the client and the elector from the flags and runs it.
func (o *electOptions) run(cmd *cobra.Command, command []string) error {
	ns, name, err := elect.ParseLeaseRef(o.lease)
	if err != nil {
		return usageError(fmt.Errorf("--lease: %w", err))
	}
	if o.healthzPort < 0 || o.healthzPort > 65535 {
		return usageError(fmt.Errorf("--healthz-port %d out of range", o.healthzPort))
	}
	coordination, err := o.coordination()
	if err != nil {
		return usageError(err)
	}
	identity := o.identity
	if identity == "" {
		if identity, err = elect.DefaultIdentity(); err != nil {
			return usageError(err)
		}
	}
	restCfg, err := electRESTConfig(o.kubeconfig)
	if err != nil {
		return &exitError{code: elect.ExitConfig, err: err}
	}
	// Every request must end within the renew deadline, or a hung
	// connection would stall the acquire loop, which has no deadline.
	restCfg.Timeout = o.renewDeadline
	restCfg.UserAgent = rest.DefaultKubernetesUserAgent() + " leasehold-elect"
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return &exitError{code: elect.ExitConfig, err: fmt.Errorf("build API client: %w", err)}
	}
	// The watch on the lease (fast hand-over) is long-running: no timeout.
	watchCfg := rest.CopyConfig(restCfg)
	watchCfg.Timeout = 0
	watchClient, err := kubernetes.NewForConfig(watchCfg)
	if err != nil {
		return &exitError{code: elect.ExitConfig, err: fmt.Errorf("build API watch client: %w", err)}
	}
	cfg := elect.Config{
		Client:        client,
		WatchClient:   watchClient,
		Namespace:     ns,
		Name:          name,
		Identity:      identity,
		LeaseDuration: o.leaseDuration,
		RenewDeadline: o.renewDeadline,
		RetryPeriod:   o.retryPeriod,
		GracePeriod:   o.gracePeriod,
		Command:       command,
		Stdout:        os.Stdout,
		Stderr:        os.Stderr,
		Logger:        slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)),
		Coordinated:   coordination,
	}
	if err := cfg.Validate(); err != nil {
		return usageError(err)
	}
	if o.healthzPort != 0 {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(o.healthzPort)))
		if err != nil {
			return usageError(fmt.Errorf("--healthz-port: %w", err))
		}
		cfg.HealthListener = l
	}
	e, err := elect.New(cfg)
	if err != nil {
		return usageError(err)
	}
	code, err := e.Run(cmd.Context())
	if code == elect.ExitOK {
		return nil
	}
	if err == nil {
		err = errors.New("elect stopped")
	}
	return &exitError{code: code, err: err}
}

// coordination turns the coordinated-election flags into the elector's
// setting (nil without --coordinated).
func (o *electOptions) coordination() (*elect.Coordination, error) {
	if !o.coordinated {
		if o.binaryVersion != "" || o.emulationVer != "" {
			return nil, errors.New("--binary-version and --emulation-version need --coordinated")
		}
		return nil, nil
	}
	if o.binaryVersion == "" {
		return nil, errors.New("--coordinated needs --binary-version")
	}
	c := &elect.Coordination{BinaryVersion: o.binaryVersion, EmulationVersion: o.emulationVer}
	if c.EmulationVersion == "" {
		c.EmulationVersion = c.BinaryVersion
	}
	return c, nil
}

// electRESTConfig reads the kubeconfig named by the flag, else by
// $KUBECONFIG (a path list, merged as kubectl does), else the in-cluster
// service account; ~/.kube/config is deliberately not consulted so that a
// pod never picks up a stray file.
func electRESTConfig(flagPath string) (*rest.Config, error) {
	rules := &clientcmd.ClientConfigLoadingRules{}
	switch env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); {
	case flagPath != "":
		rules.ExplicitPath = flagPath
	case env != "":
		rules.Precedence = filepath.SplitList(env)
	default:
		c, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no --kubeconfig, no $KUBECONFIG, and not in a cluster: %w", err)
		}
		return c, nil
	}
	c, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	return c, nil
}
