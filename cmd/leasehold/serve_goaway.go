package main

import (
	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold/internal/connguard"
)

// addGoawayFlags binds kube-apiserver's --goaway-chance (see
// internal/connguard/goaway.go).
func addGoawayFlags(cmd *cobra.Command, c *connguard.Config) {
	cmd.Flags().Float64Var(&c.GoawayChance, "goaway-chance", 0, "probability (0 to 0.02) that an HTTP/2 request's connection is sent GOAWAY once the request is answered, so that clients reconnect through the load balancer and spread over replicas; requests and watches in flight finish normally. Leave at 0 for a single replica or without a load balancer; 0.001 is a sensible start")
}
