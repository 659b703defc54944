package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/leasehold/leasehold/internal/bench"
	"github.com/leasehold/leasehold/internal/pki"
)

// newBenchBaselineCmd is `bench baseline`: the trivial Go HTTP/2+TLS server
// that issue 25 holds a renewal's server CPU to (at most 1.8 times its cost
// per request), run as its own process so that bench max's --server-pid
// accounts for it exactly as for serve.
func newBenchBaselineCmd() *cobra.Command {
	var (
		dataDir, bindAddress, kubeconfigOut string
		port                                int
		flags                               benchFlags
	)
	cmd := &cobra.Command{
		Use:   "baseline",
		Short: "Serve a trivial HTTP/2+TLS handler: the yardstick for a renewal's server CPU",
		Long: `baseline serves, with the TLS configuration, certificate and CA of the
server whose --data-dir it is given, a trivial Go net/http handler that
answers every POST and PUT with its own body and a GET of a lease
collection with an empty list: enough of the Lease API for bench max to run
against it unchanged, with the same clients and request bytes. Run bench max
against it and against leasehold serve alternately, both with --server-pid,
and compare their CPU-ms per 1000 ops (scripts/renewal-ratio.sh does).

It writes a copy of the server's admin kubeconfig that points at itself to
--kubeconfig-out. It runs with Go's default garbage collector settings
(GOGC=100 unless GOGC is set), not bench's, as a trivial Go program would.`,
		Args: cobra.NoArgs,
		// Not bench's PersistentPreRun: the yardstick keeps Go's defaults.
		PersistentPreRun: func(*cobra.Command, []string) {},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return flags.profiled(func() error {
				return runBenchBaseline(cmd.Context(), cmd, dataDir, net.JoinHostPort(bindAddress, strconv.Itoa(port)), kubeconfigOut)
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&dataDir, "data-dir", "leasehold-data", "data directory of a leasehold serve that has started once: its CA, serving certificate and admin kubeconfig are used")
	fl.StringVar(&bindAddress, "bind-address", "127.0.0.1", "address to listen on")
	fl.IntVar(&port, "secure-port", 0, "port to listen on (0: any free port)")
	fl.StringVar(&flags.cpuProfile, "cpu-profile", "", "write a pprof CPU profile of this server, from start to exit, to this file")
	fl.StringVar(&kubeconfigOut, "kubeconfig-out", "", "write the admin kubeconfig, pointed at this server, here (default: baseline.kubeconfig in --data-dir)")
	return cmd
}

func runBenchBaseline(ctx context.Context, cmd *cobra.Command, dataDir, addr, kubeconfigOut string) error {
	log := slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), nil))
	ca, err := pki.LoadCA(dataDir)
	if err != nil {
		return err
	}
	tc, err := ca.ServerTLSConfig(filepath.Join(dataDir, pki.ServingCertFile), filepath.Join(dataDir, pki.ServingKeyFile))
	if err != nil {
		return fmt.Errorf("TLS config: %w", err)
	}
	handler, err := bench.NewBaselineHandler()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	serverURL := "https://" + ln.Addr().String()
	if kubeconfigOut == "" {
		kubeconfigOut = filepath.Join(dataDir, "baseline.kubeconfig")
	}
	if err := pointKubeconfig(filepath.Join(dataDir, pki.AdminKubeconfigFile), kubeconfigOut, serverURL); err != nil {
		_ = ln.Close()
		return err
	}
	srv := &http.Server{Handler: handler, TLSConfig: tc, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ln, "", "") }()
	log.Info("serving", "address", serverURL, "kubeconfig", kubeconfigOut)
	select {
	case err := <-served:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	return nil
}

// pointKubeconfig writes the kubeconfig at from to to, with every cluster's
// server replaced by serverURL.
func pointKubeconfig(from, to, serverURL string) error {
	cfg, err := clientcmd.LoadFromFile(from)
	if err != nil {
		return fmt.Errorf("reading the server's kubeconfig: %w", err)
	}
	for _, cluster := range cfg.Clusters {
		cluster.Server = serverURL
	}
	if err := clientcmd.WriteToFile(*cfg, to); err != nil {
		return fmt.Errorf("writing %s: %w", to, err)
	}
	return nil
}
