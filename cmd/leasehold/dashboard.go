package main

import (
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold/internal/dashboard"
)

func newDashboardCmd() *cobra.Command {
	cfg := dashboard.Config{}
	var cpuProfile string
	cmd := &cobra.Command{
		Use:   "dashboard [--kubeconfig FILE] [--listen 127.0.0.1:PORT]",
		Short: "Web page of the fleet's heartbeats, expiries and leaders, served on loopback",
		Long: `dashboard watches leases, nodes and LeaderElection events with your own credentials
(client-go informers; it works against leasehold serve and any Kubernetes API server)
and serves a live page on loopback, like kubectl proxy: a heat map of every node
lease by heartbeat age, counts and a histogram, each lease's holder, renew time and
expiry, the leaders and their hand-over timeline, and what needs attention. It
prints the page's URL. Resources you may not list are shown as forbidden.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Out = cmd.OutOrStdout()
			cfg.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			return withCPUProfile(cpuProfile, func() error { return dashboard.Run(cmd.Context(), cfg) })
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "kubeconfig file; defaults to $KUBECONFIG, then ~/.kube/config")
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:8001", "loopback address to serve the page on (port 0 picks a free one)")
	fs.DurationVar(&cfg.Tick, "refresh", dashboard.DefaultTick, "how often the page is updated")
	fs.StringVar(&cpuProfile, "cpu-profile", "", "write a pprof CPU profile of the dashboard process to this file when it stops")
	return cmd
}
