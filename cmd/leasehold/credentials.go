package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/leasehold/leasehold/internal/pki"
	"github.com/leasehold/leasehold/internal/request"
)

// credentialsFlags are the flags every `credentials` verb shares.
type credentialsFlags struct {
	dataDir    string
	server     string
	out        string
	expiration time.Duration
}

func newCredentialsCmd() *cobra.Command {
	var f credentialsFlags
	cmd := &cobra.Command{
		Use:   "credentials",
		Short: "Write a kubeconfig for a node or a user, signed by the server's CA",
		Long: `Write a kubeconfig holding a client certificate signed by the CA that
'leasehold serve' keeps in --data-dir: the certificate's common name is the
user and its organizations are the groups, as Kubernetes' x509 client
authentication reads them. What the identity may do is up to RBAC (and, for
nodes, the Node authorizer).

The kubeconfig is written to --out with mode 0600 (it holds the private key):
by default next to admin.kubeconfig, as <data-dir>/node-NAME.kubeconfig or
<data-dir>/user-NAME.kubeconfig; --out - prints it to standard output instead.
Running the command again issues a new certificate and replaces the file; the
old certificate stays valid until it expires.`,
		Args: cobra.NoArgs,
	}
	node, user := newCredentialsNodeCmd(&f), newCredentialsUserCmd(&f)
	addCredentialsFlags(node, &f)
	addCredentialsFlags(user, &f)
	cmd.AddCommand(node, user, newCredentialsInitCmd())
	return cmd
}

// addCredentialsFlags gives node and user the flags of the kubeconfig they
// write. They are not persistent flags of credentials: init writes no
// kubeconfig, and its help must not offer flags it would ignore.
func addCredentialsFlags(cmd *cobra.Command, f *credentialsFlags) {
	fs := cmd.Flags()
	fs.StringVar(&f.dataDir, "data-dir", "leasehold-data", "the server's --data-dir, which holds its CA (ca.crt, ca.key)")
	fs.StringVar(&f.server, "server", "https://127.0.0.1:6443", "API server URL written into the kubeconfig")
	fs.StringVar(&f.out, "out", "", "kubeconfig file to write (default <data-dir>/node-NAME.kubeconfig or <data-dir>/user-NAME.kubeconfig; - for standard output)")
	fs.DurationVar(&f.expiration, "expiration", 8760*time.Hour, "how long the certificate is valid, e.g. 720h (never beyond the CA's own expiry)")
}

func newCredentialsNodeCmd(f *credentialsFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "node NAME",
		Short: "Credentials for a node agent: user system:node:NAME in group system:nodes",
		Long: `Write a kubeconfig for 'leasehold agent --node NAME': user system:node:NAME
in group system:nodes, the identity the Node authorizer recognises, so the
agent may renew its own lease and update its own Node and nothing else.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
				return &exitError{code: 2, err: fmt.Errorf("invalid node name %q: %s", name, strings.Join(errs, "; "))}
			}
			return writeCredentials(cmd, f, "node-"+name, request.NodeUserPrefix+name, []string{request.NodesGroup})
		},
	}
}

func newCredentialsUserCmd(f *credentialsFlags) *cobra.Command {
	var groups []string
	cmd := &cobra.Command{
		Use:   "user NAME",
		Short: "Credentials for a user in the groups given with --group",
		Example: `  leasehold credentials user alice --group devs
  leasehold credentials user ops-admin --group system:masters --expiration 24h`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if name == "" {
				return &exitError{code: 2, err: errors.New("the user name is empty")}
			}
			for _, g := range groups {
				if g == "" {
					return &exitError{code: 2, err: errors.New("a --group is empty")}
				}
			}
			return writeCredentials(cmd, f, "user-"+name, name, groups)
		},
	}
	cmd.Flags().StringArrayVar(&groups, "group", nil, "a group of the user (repeat for more; each value is one group, commas included)")
	return cmd
}

// writeCredentials mints the certificate and writes the kubeconfig; fileStem
// names the default output file.
func writeCredentials(cmd *cobra.Command, f *credentialsFlags, fileStem, user string, groups []string) error {
	if f.expiration <= 0 {
		return &exitError{code: 2, err: fmt.Errorf("--expiration %s is not positive", f.expiration)}
	}
	ca, err := pki.LoadCA(f.dataDir)
	if err != nil {
		return err
	}
	kubeconfig, notAfter, err := ca.ClientKubeconfig(f.server, user, groups, f.expiration)
	if err != nil {
		return err
	}
	out := f.out
	if out == "-" {
		_, err := cmd.OutOrStdout().Write(kubeconfig)
		return err
	}
	if out == "" {
		out = filepath.Join(f.dataDir, safeFileName(fileStem)+".kubeconfig")
	}
	if err := pki.WriteFileAtomic(out, kubeconfig, 0o600); err != nil {
		return err
	}
	describeCredentials(cmd.ErrOrStderr(), out, user, groups, notAfter)
	return nil
}

// describeCredentials tells the operator what was written and how to use it.
func describeCredentials(w io.Writer, path, user string, groups []string, notAfter time.Time) {
	fmt.Fprintf(w, "wrote %s: user %q, groups %q, expires %s\n", path, user, groups, notAfter.UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "use it with: KUBECONFIG=%s kubectl auth whoami\n", path)
}

// safeFileName keeps letters, digits, '.', '-', '_' and ':' of s and
// replaces anything else (a '/' above all) with '_'.
func safeFileName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune(".-_:", r):
			return r
		default:
			return '_'
		}
	}, s)
}
