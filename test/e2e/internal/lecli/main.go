// Command lecli is an unmodified client-go leader-election program, built by
// the end-to-end tests to compete with `leasehold elect` for one Lease: it
// uses nothing but client-go's leaderelection package with a LeaseLock.
//
// While leading it appends a line every 100 ms to the file named by
// $ELECT_E2E_LOG, in the format of the e2e elect script:
//
//	<uptime seconds> start|beat|stop <identity> <leaseTransitions at start> <pid>
//
// It exits when it stops leading (as kube-controller-manager does) or on
// SIGTERM/SIGINT, releasing the lease.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "lecli:", err)
		os.Exit(1)
	}
}

func run() error {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig path")
	lease := flag.String("lease", "", "NAMESPACE/NAME")
	identity := flag.String("identity", "", "holder identity")
	leaseDuration := flag.Duration("lease-duration", 15*time.Second, "")
	renewDeadline := flag.Duration("renew-deadline", 10*time.Second, "")
	retryPeriod := flag.Duration("retry-period", 2*time.Second, "")
	flag.Parse()
	ns, name, ok := strings.Cut(*lease, "/")
	if !ok || *identity == "" {
		return fmt.Errorf("need --lease NAMESPACE/NAME and --identity")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	cfg.Timeout = *renewDeadline
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	logPath := os.Getenv("ELECT_E2E_LOG")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: ns, Name: name},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: *identity},
	}
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   *leaseDuration,
		RenewDeadline:   *renewDeadline,
		RetryPeriod:     *retryPeriod,
		ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				token := int32(0)
				if l, err := client.CoordinationV1().Leases(ns).Get(ctx, name, metav1.GetOptions{}); err == nil && l.Spec.LeaseTransitions != nil {
					token = *l.Spec.LeaseTransitions
				}
				write(logPath, "start", *identity, token)
				t := time.NewTicker(100 * time.Millisecond)
				defer t.Stop()
				for {
					select {
					case <-ctx.Done():
						write(logPath, "stop", *identity, token)
						return
					case <-t.C:
						write(logPath, "beat", *identity, token)
					}
				}
			},
			OnStoppedLeading: func() { fmt.Fprintln(os.Stderr, "lecli: stopped leading") },
		},
	})
	return nil
}

// write appends one line; the file is opened per line with O_APPEND so
// that several processes can share it.
func write(path, kind, identity string, token int32) {
	up, err := os.ReadFile("/proc/uptime")
	if err != nil || path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %s %s %d %d\n", strings.Fields(string(up))[0], kind, identity, token, os.Getpid())
}
