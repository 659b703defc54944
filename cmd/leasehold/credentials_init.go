package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold/internal/pki"
)

// newCredentialsInitCmd is `leasehold credentials init`: the shared trust
// of several replicas, made once.
func newCredentialsInitCmd() *cobra.Command {
	var (
		dir  string
		sans []string
	)
	cmd := &cobra.Command{
		Use:   "init --dir DIR [--san HOST,...]",
		Short: "Create a CA and serving certificate that several serve replicas share",
		Long: `Create, once, the trust that several 'leasehold serve' replicas share: a CA
(DIR/ca.crt, DIR/ca.key) and a serving certificate signed by it
(DIR/apiserver.crt, DIR/apiserver.key) for 127.0.0.1, ::1, localhost and every
--san, such as the load balancer's address and the replicas' own.

Start every replica with --ca-dir DIR. Each serves the shared certificate
when it covers the replica's --bind-address and --tls-san, and otherwise one
of its own from the shared CA; either way a kubeconfig from any replica (its
admin.kubeconfig, or 'leasehold credentials user|node --data-dir DIR')
works on all of them and through the balancer.

Running it again keeps the CA (never replaced: every credential depends on
it) and reissues the serving certificate only if it does not cover the
names given, so list all of them each time. DIR/ca.key signs every
credential: keep DIR private (mode 0700) and copy it only to the replicas.`,
		Example: `  leasehold credentials init --dir /etc/leasehold/pki --san lb.example.com,10.0.0.10
  leasehold serve --ca-dir /etc/leasehold/pki --tls-san lb.example.com --etcd-servers ...`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return &exitError{code: 2, err: errors.New("--dir is required")}
			}
			ca, err := pki.EnsureCA(dir)
			if err != nil {
				return err
			}
			certFile, _, err := ca.EnsureServingCert(dir, sans)
			if err != nil {
				return err
			}
			w := cmd.ErrOrStderr()
			fmt.Fprintf(w, "CA %s (%s) and serving certificate %s ready in %s\n", pki.CACertFile, ca.Cert().Subject.CommonName, certFile, dir)
			fmt.Fprintf(w, "start each replica with: leasehold serve --ca-dir %s\n", dir)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "", "directory for the shared CA and serving certificate (created with mode 0700)")
	f.StringSliceVar(&sans, "san", nil, "DNS names or IP addresses the serving certificate covers besides the loopback ones (comma-separated or repeated)")
	return cmd
}
