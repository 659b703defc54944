package main

import (
	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold/internal/apiserver"
	"github.com/leasehold/leasehold/internal/server"
)

// addTrustFlags binds the flags that let several replicas behind one load
// balancer be one server to their clients: a shared CA (internal/server's
// TrustConfig), the balancer's names in the serving certificate, and
// kube-apiserver's --request-timeout, so that no request outlives a store
// that stopped answering by more than that.
func addTrustFlags(cmd *cobra.Command, cfg *server.Config) {
	f := cmd.Flags()
	f.StringVar(&cfg.Trust.CADir, "ca-dir", "", "directory holding a CA shared by several replicas (ca.crt, ca.key, and optionally a shared serving pair apiserver.crt/apiserver.key), created once with 'leasehold credentials init --dir DIR'; every replica then trusts the credentials the others hand out (default: a CA of this replica's own under --data-dir)")
	f.StringSliceVar(&cfg.Trust.SANs, "tls-san", nil, "extra DNS names or IP addresses the serving certificate covers, such as a load balancer's (comma-separated or repeated)")
	f.DurationVar(&cfg.RequestTimeout, "request-timeout", apiserver.DefaultRequestTimeout, "the longest a request other than a watch may take before it is answered 504 Timeout; a client's shorter ?timeout= wins")
}
