// Package etcdtest runs a real single-member etcd server in process for
// tests: on 127.0.0.1 with kernel-chosen ports, in a temporary directory,
// stopped when the test ends.
package etcdtest

import (
	"net/url"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Options tunes the server.
type Options struct {
	// Fsync keeps etcd's fsync on every commit, as in production; without it
	// tests run faster on a loaded machine and lose nothing they check.
	Fsync bool
	// TLS serves clients over TLS and requires a client certificate, both
	// issued by a fresh CA (see Server's file fields).
	TLS bool
}

// Server is a running etcd.
type Server struct {
	// Endpoint is the client URL (http:// or, with Options.TLS, https://).
	Endpoint string
	// CAFile, CertFile and KeyFile are set with Options.TLS: the CA that
	// signed the server's certificate and a client certificate it accepts.
	CAFile, CertFile, KeyFile string
}

// Start starts etcd; it stops at t's cleanup.
func Start(t testing.TB, opts Options) Server {
	t.Helper()
	var srv Server
	cfg := embed.NewConfig()
	cfg.Dir = t.TempDir()
	cfg.Name = "leasehold-test"
	// Port 0: the kernel picks free ports; the peer URL is never dialled by a
	// single member, and the client address is read back from the listener.
	client := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	if opts.TLS {
		client.Scheme = "https"
		srv = issueCerts(t)
		serverCert, serverKey := serverCertFiles(t, srv)
		cfg.ClientTLSInfo = transport.TLSInfo{
			CertFile: serverCert, KeyFile: serverKey,
			TrustedCAFile: srv.CAFile, ClientCertAuth: true,
		}
	}
	peer := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{client}
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.UnsafeNoFsync = !opts.Fsync
	// No HTTP gateway or metrics listener: fewer goroutines and ports.
	cfg.EnableGRPCGateway = false

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("starting etcd: %v", err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatalf("etcd failed while starting: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("etcd was not ready within 30s")
	}
	srv.Endpoint = client.Scheme + "://" + e.Clients[0].Addr().String()
	return srv
}
