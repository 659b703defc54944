package server

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/leasehold/leasehold/internal/authn"
	"github.com/leasehold/leasehold/internal/connguard"
	"github.com/leasehold/leasehold/internal/pki"
)

// serving is the HTTP server at work.
type serving struct {
	srv *http.Server
	// done receives what the serving goroutine's ServeTLS returned; shutdown
	// waits for it.
	done chan error
}

// listen binds the secure port, writes the admin kubeconfig for the
// address clients dial, starts serving handler behind the connection guard,
// marks the server ready and tells cfg.Ready.
func listen(cfg Config, reg prometheus.Registerer, handler http.Handler, tlsConfig *tls.Config, ca *pki.CA, ready *readiness) (*serving, error) {
	guard, err := connguard.New(cfg.Connections, reg, cfg.Logger.With("component", "connections"))
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.SecurePort)))
	if err != nil {
		return nil, fmt.Errorf("listening: %w", err)
	}
	addr := ln.Addr().String()
	kubeconfig, err := ca.EnsureAdminKubeconfig(cfg.DataDir, "https://"+clientAddress(cfg.BindAddress, ln.Addr()))
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("writing admin kubeconfig: %w", err)
	}
	srv, err := guard.Server(handler, tlsConfig)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	// Each connection's requests share the verdict on its client
	// certificate (authn/connmemo.go).
	srv.ConnContext = authn.WithConnectionMemo
	s := &serving{srv: srv, done: make(chan error, 1)}
	go func() { s.done <- srv.ServeTLS(guard.Listener(ln), "", "") }()
	ready.set(true)
	cfg.Logger.Info("serving", "address", "https://"+addr, "kubeconfig", kubeconfig, "dataDir", cfg.DataDir)
	if cfg.Ready != nil {
		cfg.Ready(addr, kubeconfig)
	}
	return s, nil
}

// clientAddress is the address clients should dial: a wildcard bind address
// is reachable on loopback.
func clientAddress(bind string, a net.Addr) string {
	_, port, _ := net.SplitHostPort(a.String())
	host := bind
	if ip := net.ParseIP(bind); ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
