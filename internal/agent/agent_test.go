package agent

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// unreachableClient is a real clientset pointed at a closed port: New must
// not talk to the server, so building an agent with it works offline.
func unreachableClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNewValidates(t *testing.T) {
	c := unreachableClient(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	good := DefaultConfig("node-a")
	bad := DefaultConfig("")
	tests := []struct {
		name      string
		client    kubernetes.Interface
		heartbeat kubernetes.Interface
		cfg       Config
		clk       clock.Clock
		log       *slog.Logger
		wantErr   string
	}{
		{"ok", c, c, good, clock.RealClock{}, log, ""},
		{"bad config", c, c, bad, clock.RealClock{}, log, "node name is required"},
		{"no heartbeat client", c, nil, good, clock.RealClock{}, log, "heartbeat client"},
		{"no clock", c, c, good, nil, log, "clock"},
		{"no logger", c, c, good, clock.RealClock{}, nil, "logger"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New(tt.client, tt.heartbeat, tt.cfg, tt.clk, tt.log)
			if tt.wantErr == "" {
				if err != nil || a == nil {
					t.Fatalf("New = %v, %v", a, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New error = %v, want containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestRunStopsOnCancel: with the server unreachable the agent keeps
// retrying; cancelling must still end Run and all its goroutines (goleak in
// TestMain checks the latter), and a second Run is refused.
func TestRunStopsOnCancel(t *testing.T) {
	c := unreachableClient(t)
	cfg := DefaultConfig("node-a")
	a, err := New(c, c, cfg, clock.RealClock{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil on cancel", err)
	}
	if err := a.Run(context.Background()); err == nil {
		t.Fatal("second Run succeeded")
	}
}

func TestHeartbeatRESTConfig(t *testing.T) {
	base := &rest.Config{Host: "https://127.0.0.1:6443", QPS: 50, Burst: 100}
	UseProtobuf(base)
	cfg := DefaultConfig("node-a")
	cfg.LeaseDurationSeconds = 4
	hb := HeartbeatRESTConfig(base, cfg)
	if hb.QPS != -1 || hb.Timeout != cfg.HeartbeatTimeout() || hb.Timeout.Seconds() != 4 {
		t.Fatalf("heartbeat config QPS=%v timeout=%s, want -1 and 4s", hb.QPS, hb.Timeout)
	}
	if hb.ContentType != "application/vnd.kubernetes.protobuf" || !strings.HasPrefix(hb.AcceptContentTypes, "application/vnd.kubernetes.protobuf") {
		t.Fatalf("heartbeat content types = %q / %q", hb.ContentType, hb.AcceptContentTypes)
	}
	if base.QPS != 50 || base.Timeout != 0 {
		t.Fatal("HeartbeatRESTConfig modified its base")
	}
}
