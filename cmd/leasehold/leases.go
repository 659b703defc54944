package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/leasehold/leasehold/internal/leasecopy"
)

func newLeasesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "leases",
		Short: "Work on the leases of a Kubernetes API or of a cluster's etcd",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newLeasesCopyCmd())
	return cmd
}

// leasesCopyFlags are the settings of `leases copy`.
type leasesCopyFlags struct {
	from, to  string
	namespace string
	etcd      leasecopy.EtcdConfig
	follow    bool
	forTime   time.Duration
	workers   int
	qps       float32
	burst     int
}

func newLeasesCopyCmd() *cobra.Command {
	var f leasesCopyFlags
	cmd := &cobra.Command{
		Use:   "copy --from-kubeconfig FILE (--to-kubeconfig FILE | --to-etcd-servers URLS)",
		Short: "Copy every Lease from one API to another API or into a cluster's etcd, once or continuously",
		Long: `copy reads every coordination.k8s.io/v1 Lease (of --namespace, default
all) from the API server --from-kubeconfig names (a cluster's kube-apiserver,
or Leasehold itself through DATA_DIR/admin.kubeconfig) and writes its spec
(holder, duration, acquire and renew times, transitions, strategy, preferred
holder), labels, annotations and ownerReferences to the target:

  --to-kubeconfig FILE   another Kubernetes API (Leasehold's admin.kubeconfig,
                         or a cluster whose APIService serves leases locally);
                         leases are created, or updated over the target's
                         current resourceVersion.
  --to-etcd-servers URLS the etcd a kube-apiserver keeps its own lease storage
                         in, written directly in Kubernetes' storage encoding
                         at PREFIX/leases/NS/NAME. Use it while the APIService
                         v1.coordination.k8s.io points at Leasehold: the
                         cluster's built-in lease storage can then only be
                         written in etcd.

A lease whose content is already the target's is not written; a target copy
that is newer (more transitions, or a later renew or acquire time) is left
alone, and every write is conditional on the version compared, so a writer
that reaches the target directly is never overwritten with older content.
The first pass deletes nothing; with --follow, a lease deleted on the source
is deleted on the target.

--follow keeps mirroring (list and watch, re-listing when a watch fails)
until SIGINT or SIGTERM, or until --for has passed. A progress line is
printed each second in which 1,000 or more leases were handled, and a
summary at the end. A lease that cannot be written is retried with backoff:
a single pass gives up on it after 5 attempts, a mirror keeps retrying (at
least every 5 seconds) and names it on stderr once. The exit status is 0
when every lease was copied, 1 when any could not be (a mirror: was still
failing at the end; each is named on stderr), 2 for a usage error.

Which target when (see docs/take-lease-load-off-etcd.md):
  Switching leases onto Leasehold:
    1. cluster -> Leasehold with --follow (--from-kubeconfig the cluster's
       admin kubeconfig, --to-kubeconfig DATA_DIR/admin.kubeconfig), until
       the APIService points at Leasehold and is Available; then stop it.
    2. Leasehold -> the cluster's etcd with --follow --for 10m
       (--from-kubeconfig DATA_DIR/admin.kubeconfig, --to-etcd-servers), so
       that watches opened before the switch, which keep reading the
       built-in storage for up to 10 minutes, still see every renewal.
  Switching back:
    1. Leasehold -> the cluster's etcd with --follow, until the APIService
       is Local again and Available; then stop it.
    2. cluster -> Leasehold with --follow --for 10m, for the watches still
       open on Leasehold.`,
		Example: `  # One pass, cluster to a Leasehold on this machine:
  leasehold leases copy --from-kubeconfig admin.conf --to-kubeconfig leasehold-data/admin.kubeconfig

  # Mirror Leasehold's leases into the cluster's etcd for 10 minutes:
  leasehold leases copy --from-kubeconfig leasehold-data/admin.kubeconfig --follow --for 10m \
    --to-etcd-servers https://10.0.0.10:2379 --etcd-cafile /etc/kubernetes/pki/etcd/ca.crt \
    --etcd-certfile /etc/kubernetes/pki/apiserver-etcd-client.crt \
    --etcd-keyfile /etc/kubernetes/pki/apiserver-etcd-client.key`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.validate(cmd); err != nil {
				return &exitError{code: 2, err: err}
			}
			return runLeasesCopy(cmd, f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.from, "from-kubeconfig", "", "kubeconfig of the API server to read leases from (required)")
	fs.StringVar(&f.to, "to-kubeconfig", "", "kubeconfig of the API server to write leases to")
	fs.StringVarP(&f.namespace, "namespace", "n", "", "copy only this namespace's leases (default: all namespaces)")
	fs.StringSliceVar(&f.etcd.Endpoints, "to-etcd-servers", nil, "etcd client URLs (comma-separated) to write leases to, as kube-apiserver stores them")
	fs.StringVar(&f.etcd.Prefix, "etcd-prefix", "/registry", "with --to-etcd-servers: kube-apiserver's --etcd-prefix")
	fs.StringVar(&f.etcd.CAFile, "etcd-cafile", "", "with --to-etcd-servers: CA bundle that verifies the etcd servers")
	fs.StringVar(&f.etcd.CertFile, "etcd-certfile", "", "with --to-etcd-servers: client certificate for etcd, with --etcd-keyfile")
	fs.StringVar(&f.etcd.KeyFile, "etcd-keyfile", "", "with --to-etcd-servers: client certificate key for etcd")
	fs.BoolVar(&f.follow, "follow", false, "after the first pass, keep mirroring changes and deletions until interrupted or --for has passed")
	fs.DurationVar(&f.forTime, "for", 0, "with --follow: stop after this long (0: until SIGINT or SIGTERM)")
	fs.IntVar(&f.workers, "workers", 8, "leases copied at once")
	fs.Float32Var(&f.qps, "kube-api-qps", -1, "queries per second to each API server; negative sets no limit (--workers then bounds the requests in flight)")
	fs.IntVar(&f.burst, "kube-api-burst", 400, "burst of queries to each API server, with a positive --kube-api-qps")
	return cmd
}

// validate checks the flag combinations, worded as kubectl words its
// usage errors.
func (f *leasesCopyFlags) validate(cmd *cobra.Command) error {
	if f.from == "" {
		return errors.New("--from-kubeconfig is required")
	}
	if (f.to == "") == (len(f.etcd.Endpoints) == 0) {
		return errors.New("must specify exactly one of --to-kubeconfig or --to-etcd-servers")
	}
	if f.to != "" {
		for _, name := range []string{"etcd-prefix", "etcd-cafile", "etcd-certfile", "etcd-keyfile"} {
			if cmd.Flags().Changed(name) {
				return fmt.Errorf("--%s can only be used with --to-etcd-servers", name)
			}
		}
	}
	if cmd.Flags().Changed("for") && !f.follow {
		return errors.New("--for can only be used with --follow")
	}
	if f.forTime < 0 {
		return fmt.Errorf("invalid --for %v: must not be negative", f.forTime)
	}
	if f.workers < 1 {
		return fmt.Errorf("invalid --workers %d: must be at least 1", f.workers)
	}
	return nil
}

func runLeasesCopy(cmd *cobra.Command, f leasesCopyFlags) error {
	ctx := cmd.Context()
	if f.forTime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.forTime)
		defer cancel()
	}
	source, err := f.client(f.from, "--from-kubeconfig")
	if err != nil {
		return err
	}
	var target leasecopy.Target
	if f.to != "" {
		c, err := f.client(f.to, "--to-kubeconfig")
		if err != nil {
			return err
		}
		target = leasecopy.NewAPITarget(c)
	} else {
		target, err = leasecopy.NewEtcdTarget(ctx, f.etcd)
		if err != nil {
			return err
		}
	}
	defer func() { _ = target.Close() }()
	start := time.Now()
	stats, err := leasecopy.Run(ctx, leasecopy.Config{
		Source: source, Namespace: f.namespace, Target: target, Follow: f.follow, Workers: f.workers,
		Out: cmd.OutOrStdout(), Errs: cmd.ErrOrStderr(),
	})
	if stats != nil {
		fmt.Fprintf(cmd.OutOrStdout(), "leases copy done in %s: %s\n", time.Since(start).Round(time.Millisecond), stats)
	}
	return err
}

// client builds a clientset from a kubeconfig file named by flag.
func (f *leasesCopyFlags) client(path, flag string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("load %s %s: %w", flag, path, err)
	}
	// client-go's default of 5 per second would make a 100,000-lease
	// first pass take hours, and a mirror of a large cluster's renewals
	// (two requests each) fall behind for good. The copy's own bound is
	// --workers requests in flight per target.
	cfg.QPS, cfg.Burst = f.qps, f.burst
	cfg.UserAgent = "leasehold-leases-copy"
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for %s %s: %w", flag, path, err)
	}
	return c, nil
}
