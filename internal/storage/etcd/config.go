package etcd

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
)

// DefaultPrefix is where kube-apiserver keeps its keys (--etcd-prefix).
const DefaultPrefix = "/registry"

// DefaultDialTimeout bounds the first connection to the cluster.
const DefaultDialTimeout = 20 * time.Second

// Config says which cluster to use and how to reach it.
type Config struct {
	// Endpoints are the etcd client URLs, e.g. "https://10.0.0.1:2379".
	Endpoints []string
	// Prefix replaces the leading "/registry" of every key (see the package
	// doc); empty means DefaultPrefix, which stores keys verbatim.
	Prefix string
	// CAFile, CertFile and KeyFile secure the connection as kube-apiserver's
	// --etcd-cafile, --etcd-certfile and --etcd-keyfile do. CAFile alone
	// verifies the server; CertFile and KeyFile add a client certificate.
	CAFile   string
	CertFile string
	KeyFile  string
	// DialTimeout bounds connecting and New's first request (default 20 s).
	DialTimeout time.Duration
	// CallTimeout bounds each request to etcd (default DefaultCallTimeout;
	// see fail for what a request that runs out of it returns).
	CallTimeout time.Duration
	// CompactInterval, when positive, runs the compactor (see the package
	// doc); zero leaves compaction to etcd or to explicit Compact calls.
	CompactInterval time.Duration
	// Logger receives the driver's and the etcd client's logs.
	Logger *slog.Logger

	// leaderCheck is how often followLeader checks the connection
	// (DefaultLeaderCheckInterval when zero; tests shorten it).
	leaderCheck time.Duration
}

// withDefaults returns cfg with empty fields filled in and checks the rest.
func (cfg Config) withDefaults() (Config, error) {
	if len(cfg.Endpoints) == 0 {
		return cfg, errors.New("etcd: no endpoints")
	}
	for _, e := range cfg.Endpoints {
		if strings.TrimSpace(e) == "" {
			return cfg, fmt.Errorf("etcd: empty endpoint in %q", cfg.Endpoints)
		}
	}
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if !strings.HasPrefix(cfg.Prefix, "/") {
		return cfg, fmt.Errorf("etcd: prefix %q must start with /", cfg.Prefix)
	}
	// "/registry/" and "/registry" mean the same place.
	cfg.Prefix = strings.TrimRight(cfg.Prefix, "/")
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		return cfg, errors.New("etcd: a client certificate needs both a cert file and a key file")
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.leaderCheck <= 0 {
		cfg.leaderCheck = DefaultLeaderCheckInterval
	}
	if cfg.CompactInterval < 0 {
		return cfg, fmt.Errorf("etcd: negative compaction interval %v", cfg.CompactInterval)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return cfg, nil
}

// tlsConfig builds the client TLS configuration, or nil for plain text when
// no file is given (the endpoints then must be http:// URLs).
func (cfg Config) tlsConfig() (*tls.Config, error) {
	if cfg.CAFile == "" && cfg.CertFile == "" {
		return nil, nil
	}
	info := transport.TLSInfo{TrustedCAFile: cfg.CAFile, CertFile: cfg.CertFile, KeyFile: cfg.KeyFile}
	tc, err := info.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("etcd: TLS configuration: %w", err)
	}
	return tc, nil
}
