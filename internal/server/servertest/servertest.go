// Package servertest starts a real `leasehold serve` server in process for
// tests: real TLS on 127.0.0.1 with a free port, a temporary data dir, and
// the admin kubeconfig, stopped and cleaned up when the test ends.
package servertest

import (
	"context"
	"log/slog"
	"os"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/leasehold/leasehold/internal/server"
)

// Server is a running test server.
type Server struct {
	Addr       string
	Kubeconfig string
	DataDir    string
	Config     *rest.Config
	Client     kubernetes.Interface
	stop       func()
}

// Start runs a server until the test ends. modify may adjust the config.
func Start(t testing.TB, modify ...func(*server.Config)) *Server {
	t.Helper()
	return StartIn(t, t.TempDir(), modify...)
}

// StartIn runs a server on dataDir (reuse a dir to test restarts).
func StartIn(t testing.TB, dataDir string, modify ...func(*server.Config)) *Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	type ready struct{ addr, kubeconfig string }
	readyCh := make(chan ready, 1)
	level := slog.LevelWarn
	if os.Getenv("LEASEHOLD_TEST_VERBOSE") != "" {
		level = slog.LevelDebug
	}
	cfg := server.Config{
		DataDir:     dataDir,
		BindAddress: "127.0.0.1",
		SecurePort:  0,
		Logger:      slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
		Ready:       func(addr, kc string) { readyCh <- ready{addr, kc} },
		// Most tests' objects then go cold within a second, so every test
		// also reads objects the cache had to decompress and decode.
		WatchCacheColdAfter: 250 * time.Millisecond,
	}
	for _, m := range modify {
		m(&cfg)
	}
	done := make(chan error, 1)
	go func() { done <- server.Run(ctx, cfg) }()
	var r ready
	select {
	case r = <-readyCh:
	case err := <-done:
		cancel()
		t.Fatalf("server exited before serving: %v", err)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("server did not start within 30s")
	}
	s := &Server{Addr: r.addr, Kubeconfig: r.kubeconfig, DataDir: dataDir}
	stopped := false
	s.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("server exited with error: %v", err)
			}
		case <-time.After(30 * time.Second):
			// The goroutines still running say which part of the server
			// ignored its cancel; without them this failure is a guess.
			var dump strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&dump, 2)
			t.Errorf("server did not stop within 30s; goroutines:\n%s", dump.String())
		}
	}
	t.Cleanup(s.stop)
	var err error
	if s.Config, err = clientcmd.BuildConfigFromFlags("", r.kubeconfig); err != nil {
		t.Fatalf("loading kubeconfig: %v", err)
	}
	s.Config.QPS, s.Config.Burst = -1, 0
	if s.Client, err = kubernetes.NewForConfig(s.Config); err != nil {
		t.Fatalf("client: %v", err)
	}
	return s
}

// Stop shuts the server down now (it is otherwise stopped at cleanup).
func (s *Server) Stop() { s.stop() }

// ProtobufConfig returns a copy of Config that talks protobuf, as kubelets
// and controllers do.
func (s *Server) ProtobufConfig() *rest.Config {
	c := rest.CopyConfig(s.Config)
	c.ContentType = "application/vnd.kubernetes.protobuf"
	c.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	return c
}
