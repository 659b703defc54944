package main

import "github.com/spf13/cobra"

// subcommands lists the verbs of the binary; each lives in its own file.
func subcommands() []*cobra.Command {
	return []*cobra.Command{
		newServeCmd(), newAgentCmd(), newBenchCmd(), newElectCmd(), newCredentialsCmd(), newAuditCmd(),
		newDashboardCmd(),
		newSnapshotCmd(), newLeasesCmd()}
}
