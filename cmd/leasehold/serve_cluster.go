package main

import (
	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold/internal/server"
)

// addClusterFlags binds the flags of serving behind a real cluster, as the
// aggregated API server of coordination.k8s.io (internal/cluster). The
// names and defaults are those every aggregated server has (metrics-server,
// sample-apiserver), so a manifest written for one reads right here.
func addClusterFlags(cmd *cobra.Command, cfg *server.Config) {
	f := cmd.Flags()
	c := &cfg.Cluster
	f.StringVar(&c.AuthenticationKubeconfig, "authentication-kubeconfig", "", "kubeconfig of the cluster Leasehold serves behind: it reviews bearer tokens and publishes the front-proxy and client CAs in kube-system/extension-apiserver-authentication. Setting it serves only coordination.k8s.io, for the cluster's APIService, with the cluster's identities, RBAC and namespaces, and runs none of Leasehold's own controllers")
	f.StringVar(&c.AuthorizationKubeconfig, "authorization-kubeconfig", "", "kubeconfig of the cluster whose RBAC objects are watched and which answers SubjectAccessReviews for what they do not allow (default: --authentication-kubeconfig)")
	rh := &c.RequestHeader
	f.StringVar(&rh.ClientCAFile, "requestheader-client-ca-file", "", "CA bundle that verifies the front proxy's client certificate before its identity headers are trusted; with it the --requestheader-* flags replace the cluster's ConfigMap")
	f.StringSliceVar(&rh.AllowedNames, "requestheader-allowed-names", nil, "common names the front proxy's client certificate may have (empty: any name the CA signed)")
	f.StringSliceVar(&rh.UsernameHeaders, "requestheader-username-headers", []string{"X-Remote-User"}, "request headers to read the user name from; the first one set wins")
	f.StringSliceVar(&rh.UIDHeaders, "requestheader-uid-headers", []string{"X-Remote-Uid"}, "request headers to read the user's UID from")
	f.StringSliceVar(&rh.GroupHeaders, "requestheader-group-headers", []string{"X-Remote-Group"}, "request headers to read groups from; every value is a group")
	f.StringSliceVar(&rh.ExtraHeaderPrefixes, "requestheader-extra-headers-prefix", []string{"X-Remote-Extra-"}, "request header prefixes of the user's extra attributes")
}
