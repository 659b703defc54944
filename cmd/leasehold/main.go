// Command leasehold is the Kubernetes lease system as one program: the API
// server and its controllers (serve), the node heartbeat agent (agent), leader
// election for any command (elect) and a load generator (bench).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := newRootCmd().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "leasehold:", err)
		stop()
		os.Exit(exitCode(err))
	}
}
