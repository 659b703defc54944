package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/leasehold/leasehold/internal/bench"
	"github.com/leasehold/leasehold/internal/storage/etcd"
)

// newBenchEtcdCASCmd is `bench etcd-cas`: the raw etcd compare-and-put
// throughput the etcd driver is held to (at least 0.8x; docs/performance.md,
// "Measuring Leasehold on etcd"), measured
// with the same clients and keys as `bench max` through a server.
func newBenchEtcdCASCmd() *cobra.Command {
	var (
		flags     benchFlags
		endpoints []string
		keys      int
		valueSize int
		leader    bool
		interval  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "etcd-cas",
		Short: "Raw etcd compare-and-put transactions, the yardstick for max through a server on etcd",
		Long: `etcd-cas sends the transaction a lease renewal becomes in etcd
(If ModRevision==rev Then Put) straight to the cluster: --clients clients
each swap their share of --leases keys back to back, as bench max renews
leases. Run it against the cluster a server under test uses, alternately
with bench max through that server, and compare the throughputs. Keys live
under /leasehold-bench/, outside any server's /registry prefix.

By default the transactions go through etcd's own client, which spreads
them round-robin over the members (followers forward writes to the
leader). --leader sends them all to the leader instead, as serve's etcd
driver does (pick-first, leader first): the yardstick then has the
driver's own advantage and the comparison shows only the server's cost.

With --interval the load is paced as bench rate paces renewals: every key
is swapped once per interval, the keys' turns spread evenly over it, so
that etcd's CPU per transaction can be compared with its CPU per renewal
through a server at the same throughput (etcd's batches, and so its cost
per transaction, depend on the load).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return flags.profiled(func() error { return runBenchEtcdCAS(cmd, &flags, endpoints, keys, valueSize, leader, interval) })
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&endpoints, "etcd-servers", nil, "etcd client URLs, comma separated (as serve's --etcd-servers)")
	fl.StringVar(&flags.namespace, "namespace", "bench", "names the run's key range, so runs can keep apart")
	fl.IntVar(&flags.clients, "clients", 64, "number of concurrent clients")
	fl.IntVar(&keys, "leases", 1000, "number of keys, partitioned among the clients")
	fl.BoolVar(&leader, "leader", false, "send every transaction to the etcd leader, as serve's driver does, instead of round-robin over the members")
	fl.DurationVar(&interval, "interval", 0, "swap each key once per interval, paced as bench rate (default 0: back to back)")
	fl.IntVar(&valueSize, "value-size", 350, "bytes written per swap (a stored renewed Lease is about 350)")
	fl.DurationVar(&flags.duration, "duration", 30*time.Second, "length of the measured period, after setup")
	fl.DurationVar(&flags.requestTimeout, "request-timeout", bench.DefaultRequestTimeout, "timeout of each transaction")
	fl.IntVar(&flags.serverPID, "server-pid", 0, "PID of a local process (an etcd member, say) whose CPU time and peak RSS to report")
	fl.StringVar(&flags.output, "output", "text", "final result format: text or json")
	fl.StringVar(&flags.cpuProfile, "cpu-profile", "", "write a pprof CPU profile of this load generator to this file")
	return cmd
}

func runBenchEtcdCAS(cmd *cobra.Command, flags *benchFlags, endpoints []string, keys, valueSize int, leader bool, interval time.Duration) error {
	if len(endpoints) == 0 {
		return fmt.Errorf("--etcd-servers is required")
	}
	if flags.output != "text" && flags.output != "json" {
		return fmt.Errorf("--output %q: want text or json", flags.output)
	}
	var client *clientv3.Client
	if leader {
		// The driver's own connection: the same client settings and
		// member choice as a server's, used raw.
		store, err := etcd.New(cmd.Context(), etcd.Config{Endpoints: endpoints, DialTimeout: 10 * time.Second})
		if err != nil {
			return err
		}
		defer func() { _ = store.Close() }()
		client = store.Client()
	} else {
		c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 10 * time.Second})
		if err != nil {
			return fmt.Errorf("connecting to etcd %v: %w", endpoints, err)
		}
		defer func() { _ = c.Close() }()
		client = c
	}
	cfg := bench.Config{
		Namespace:      flags.namespace,
		Duration:       flags.duration,
		Clients:        flags.clients,
		Leases:         keys,
		Interval:       interval,
		RequestTimeout: flags.requestTimeout,
		ServerPID:      flags.serverPID,
		Progress:       cmd.ErrOrStderr(),
		Logger:         slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)),
	}
	w, err := bench.NewEtcdCASWorkload(cfg, client, valueSize)
	if err != nil {
		return err
	}
	res, err := bench.Run(cmd.Context(), cfg, w)
	if err != nil {
		return err
	}
	return flags.print(cmd, res)
}
